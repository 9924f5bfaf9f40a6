import { useState } from "preact/hooks";
import { session } from "../api/client";
import { Field } from "../components/page";

/**
 * Checks a secret key against the API (GET /contacts?limit=1 with it) before keeping it
 * in this tab's sessionStorage. A refused key says "invalid" and nothing more.
 */
export function SignIn(props: { onSignedIn: () => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin" id="main">
      <h1>Edge Mail</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const res = await fetch("/contacts?limit=1", { headers: { Authorization: `Bearer ${key.trim()}` } });
            if (res.status === 401 || res.status === 403) setError("That key is invalid.");
            else if (!res.ok) setError(`The server answered ${res.status}; try again.`);
            else {
              session.signIn(key.trim());
              props.onSignedIn();
            }
          } catch {
            setError("The server could not be reached.");
          } finally {
            setBusy(false);
          }
        }}
      >
        <Field label="Secret key" hint="A project's sk_ key (npm run dev prints the local one; it is also in .dev/project.json). Kept in this tab only.">
          {(id) => <input id={id} type="password" autocomplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />}
        </Field>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
