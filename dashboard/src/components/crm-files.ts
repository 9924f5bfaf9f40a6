import { api, call } from "../api/client";

/**
 * Files in and out of the API for the contacts, import and webhook pages: a CSV download that carries the
 * Authorization header (fetched as a blob through the typed client's auth middleware, then saved through an
 * object URL), a CSV written in the page, and calls whose query the generated types do not know yet.
 */

type Init = {
  params?: { path?: Record<string, string>; query?: Record<string, string | boolean | undefined> };
  body?: unknown;
  headers?: Record<string, string>;
  bodySerializer?: (body: unknown) => unknown;
  parseAs?: "json" | "blob" | "text";
};
type Answer = Promise<{ data?: unknown; error?: unknown; response: Response }>;

/**
 * The client without its per-path types, for query parameters the server takes before the generated
 * schema.d.ts lists them (`columns` on an import, `format` and `bom` on an export). Auth and 401 handling are the client's.
 */
export const untyped = {
  GET: api.GET as unknown as (path: string, init: Init) => Answer,
  POST: api.POST as unknown as (path: string, init: Init) => Answer,
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

/** GETs `path` with the signed-in key and saves the answer as a file (the server's name for it, else `fallback`). */
export async function downloadFile(path: string, query: Record<string, string | boolean | undefined>, fallback: string) {
  let disposition: string | null = null;
  const answer = untyped.GET(path, { params: { query }, parseAs: "blob" }).then((a) => {
    disposition = a.response.headers.get("content-disposition");
    return a;
  });
  const blob = (await call(answer)) as Blob;
  saveBlob(blob, dispositionName(disposition) ?? fallback);
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
