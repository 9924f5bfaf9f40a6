import { useEffect, useState } from "preact/hooks";
import { api, type Contact, call } from "./api/client";
import { Field } from "./components/page";

/**
 * Choose a contact by searching its email (GET /contacts?search=): its data fills the preview and,
 * on a campaign, the test send (POST /campaigns/{id}/test with contactId).
 */
export function ContactPicker(props: { chosen: Contact | null; onChoose: (contact: Contact | null) => void }) {
  const [search, setSearch] = useState("");
  const [found, setFound] = useState<Contact[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!search.trim()) {
      setFound(null);
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      call(api.GET("/contacts", { params: { query: { search: search.trim(), limit: 8 } } })).then(
        (page) => {
          if (!live) return;
          setFound(page.contacts);
          setError(null);
        },
        (err: unknown) => live && setError(err instanceof Error ? err.message : String(err)),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [search]);
  return (
    <div class="contact-picker">
      {props.chosen ? (
        <p class="contact-chosen">
          Previewing as <strong>{props.chosen.email}</strong>{" "}
          <button type="button" class="small" onClick={() => props.onChoose(null)}>
            Use sample data
          </button>
        </p>
      ) : (
        <>
          <Field label="Preview as contact" hint="Search by email; the contact's data fills the preview and the test send.">
            {(id) => (
              <input
                id={id}
                type="search"
                autocomplete="off"
                value={search}
                onInput={(e) => setSearch(e.currentTarget.value)}
                onKeyDown={(e) => e.key === "Enter" && e.preventDefault()}
              />
            )}
          </Field>
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          {found && (
            <ul class="contact-results" aria-label="Matching contacts">
              {found.length === 0 && <li>No contact matches.</li>}
              {found.map((c) => (
                <li>
                  <button
                    type="button"
                    class="small"
                    onClick={() => {
                      setSearch("");
                      props.onChoose(c);
                    }}
                  >
                    {c.email}
                  </button>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </div>
  );
}
