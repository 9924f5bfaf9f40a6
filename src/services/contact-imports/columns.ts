import { ApiError } from "../../lib/errors";

/**
 * A CSV header read as a column plan: where the email is and what each other
 * column means. The upload checks the header with it; each chunk reads its
 * rows against it (process.ts).
 */

/** Largest CSV record (characters): a contact's data is at most 64 KB, so a longer row cannot be stored. */
export const MAX_RECORD_CHARS = 128 * 1024;

/** The CSV parser's options, for the upload and for each chunk's byte range (which adds the header's record delimiter). */
export const CSV_OPTIONS = { relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS } as const;

/** Columns a header may have. */
const MAX_COLUMNS = 200;

export type ColumnPlan = ReturnType<typeof planColumns>;

/**
 * What a column is for: the address, the subscription, the `data` JSON column of our own export,
 * a column left out (our export's id and timestamps, a blank name), or a data key.
 */
export type ColumnRole = "email" | "subscribed" | "data" | "ignore" | "key";

/** A header name compared as the contract says: case-insensitive, spaces, `_`, `-` and `.` ignored. */
const normal = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[\s_.-]+/g, "");

/** The email column as Mailchimp, Brevo, SendGrid, Klaviyo, Kit, Resend, Loops and Plunk export it ("Email Address", "E-mail", "email_address"). */
const EMAIL_NAMES = new Set(["email", "emailaddress", "mail"]);
/** The subscription column under the names those tools use ("Opted In", "opt_in", "EMAIL_OPT_IN"). */
const SUBSCRIBED_NAMES = new Set(["subscribed", "optedin", "optin", "emailoptin", "subscribe"]);
/** Our own export's columns that are not data (GET /contacts/export: id, email, subscribed, createdAt, updatedAt, data). */
const IGNORED_NAMES = new Set(["id", "createdat", "updatedat"]);

/**
 * A column's data key, lower camelCase of its words: `First Name` -> `firstName`, `MEMBER_RATING` ->
 * `memberRating`, `OPTIN_TIME` -> `optinTime`; a one-word name already in camelCase (`firstName`) stays.
 */
function dataKeyOf(name: string): string {
  const words = name
    .trim()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  if (words.length === 0) return "";
  const lowerFirst = (word: string) => (word === word.toUpperCase() ? word.toLowerCase() : word[0].toLowerCase() + word.slice(1));
  const capitalized = (word: string) => word[0].toUpperCase() + (word === word.toUpperCase() ? word.slice(1).toLowerCase() : word.slice(1));
  return lowerFirst(words[0]) + words.slice(1).map(capitalized).join("");
}

/** The header as a column plan: where the email is, and what each other column means (its role, and its data key). */
export function planColumns(header: string[]) {
  if (header.length > MAX_COLUMNS) {
    throw ApiError.validation([{ field: "body", message: `The header has ${header.length} columns; at most ${MAX_COLUMNS}`, code: "too_big" }]);
  }
  const normals = header.map(normal);
  // The address: a column named exactly "email" first, else the first of the other names tools use.
  const exact = normals.indexOf("email");
  const email = exact >= 0 ? exact : normals.findIndex((n) => EMAIL_NAMES.has(n));
  if (email < 0) {
    throw ApiError.validation([
      {
        field: "email",
        message:
          'The CSV has no email column: its first row must be a header naming one ("email", "Email Address", "E-mail", "email_address" or "mail", case-insensitive)',
        code: "required",
      },
    ]);
  }
  const subscribed = normals.findIndex((n) => SUBSCRIBED_NAMES.has(n));
  const roles: ColumnRole[] = [];
  const keys: string[] = [];
  const seen = new Set<string>();
  header.forEach((name, i) => {
    if (name.trim().length > 128) throw ApiError.validation([{ field: "body", message: "Column names may be at most 128 characters", code: "too_big" }]);
    const n = normals[i];
    const dataKey = dataKeyOf(name);
    const role: ColumnRole =
      i === email ? "email" : i === subscribed ? "subscribed" : n === "data" ? "data" : IGNORED_NAMES.has(n) || dataKey === "" ? "ignore" : "key";
    // What the column names: its data key, or its role (so a second "Email" is a duplicate, not a key `email`).
    const key = role === "key" ? dataKey : role === "ignore" ? "" : role;
    if (key !== "" && seen.has(key)) {
      throw ApiError.validation([
        { field: "body", message: `The column "${name.trim()}" appears twice in the header (as "${key}")`, code: "duplicate_column" },
      ]);
    }
    if (key !== "") seen.add(key);
    roles.push(role);
    keys.push(key);
  });
  return { email, roles, keys };
}
