import { api, call } from "../api/client";

/**
 * Files in and out of the API for the contacts and import pages: a CSV download that carries the
 * Authorization header (fetched as a blob through the typed client's auth middleware, then saved through an
 * object URL), a CSV written in the page, and the client for paths chosen at run time.
 */

type Init = { params?: { query?: Record<string, string | undefined> } };
type Answer = Promise<{ data?: unknown; error?: unknown; response: Response }>;

/** The client without its per-path types, for a path chosen at run time (crm-names.tsx). Auth and 401 handling are the client's. */
export const untyped = {
  GET: api.GET as unknown as (path: string, init: Init) => Answer,
};

/** Saves `blob` as a file named `name` (an object URL behind a download link, released right after). */
export function saveBlob(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The file name a Content-Disposition header gives, if any. */
function dispositionName(header: string | null): string | undefined {
  return header?.match(/filename\*?=(?:UTF-8'')?"?([^";]+)"?/i)?.[1];
}

/**
 * Saves the answer of a GET made with `parseAs: "blob"` (so with the signed-in key) as a file: the server's name
 * for it, else `fallback`; an error answer throws the API's message.
 */
export async function downloadAnswer(answer: Promise<{ data?: Blob; error?: unknown; response: Response }>, fallback: string) {
  const { response } = await answer;
  const blob = await call(answer);
  saveBlob(blob, dispositionName(response.headers.get("content-disposition")) ?? fallback);
}

/** One CSV field, quoted when it has to be (RFC 4180). */
const field = (value: unknown) => {
  const text = value === null || value === undefined ? "" : String(value);
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
};

/** Rows as a CSV file (CRLF line ends, as RFC 4180 has them). */
export const csvOf = (rows: unknown[][]) => new Blob([`${rows.map((r) => r.map(field).join(",")).join("\r\n")}\r\n`], { type: "text/csv" });

/** Today as YYYY-MM-DD, for file names. */
export const today = () => new Date().toISOString().slice(0, 10);
