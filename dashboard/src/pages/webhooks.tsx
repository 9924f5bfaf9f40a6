import { untyped } from "../api/client";
import { Loading, Page, useLoad, when } from "../ui";

interface Endpoint {
  id: string;
  url: string;
  events?: string[];
  enabled?: boolean;
  createdAt?: string;
}

/**
 * Event webhooks are not part of this server's API yet. The page asks GET /webhooks
 * (with the same key) and lists what it answers; a 404 means the server has none.
 */
export function WebhookList() {
  const state = useLoad(async () => {
    const body = await untyped<{ data?: { items?: Endpoint[] } | Endpoint[]; items?: Endpoint[] }>("/webhooks");
    if (body === null) return null;
    const data = body.data ?? body;
    return (Array.isArray(data) ? data : (data.items ?? [])) as Endpoint[];
  }, []);
  return (
    <Page title="Webhooks">
      <Loading state={state} />
      {!state.loading && state.data === null && !state.error && <p>Webhooks are not available on this server.</p>}
      {state.data && state.data.length === 0 && <p>No webhook endpoints yet.</p>}
      {state.data && state.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col">Events</th>
              <th scope="col">Enabled</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {state.data.map((w) => (
              <tr>
                <td>{w.url}</td>
                <td>{(w.events ?? []).join(", ") || "all"}</td>
                <td>{w.enabled === false ? "no" : "yes"}</td>
                <td>{when(w.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
