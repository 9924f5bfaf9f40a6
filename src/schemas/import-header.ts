/**
 * How a contact import reads a CSV header without a mapping (CONTRACT "Contact import as exported"):
 * shared by the server (src/services/contact-imports/columns.ts) and the dashboard's mapping step
 * (dashboard/src/components/crm-import-plan.ts), so the page shows exactly what the server will do.
 * Imports nothing.
 */

/** A header name compared as the contract says: case-insensitive, spaces, `_`, `-` and `.` ignored. */
export const normalHeader = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[\s_.-]+/g, "");

/** The email column as Mailchimp, Brevo, SendGrid, Klaviyo, Kit, Resend, Loops and Plunk export it ("Email Address", "E-mail", "email_address"). */
export const EMAIL_NAMES = new Set(["email", "emailaddress", "mail"]);
/** The subscription column under the names those tools use ("Opted In", "opt_in", "EMAIL_OPT_IN"). */
export const SUBSCRIBED_NAMES = new Set(["subscribed", "optedin", "optin", "emailoptin", "subscribe"]);
/** Our own export's columns that are not data (GET /contacts/export: id, email, subscribed, createdAt, updatedAt, data). */
export const IGNORED_NAMES = new Set(["id", "createdat", "updatedat"]);
/** A data key segment conditions and templates can name: ASCII letters, digits, `_` and `-`. */
export const DATA_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A column's data key, lower camelCase of its words in ASCII (accents dropped): `First Name` ->
 * `firstName`, `MEMBER_RATING` -> `memberRating`, `Prénom` -> `prenom`; a one-word name already in
 * camelCase (`firstName`) stays; at most 64 characters. A name without a letter or digit gives "".
 */
export function dataKeyOf(name: string): string {
  const words = name
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  if (words.length === 0) return "";
  const lowerFirst = (word: string) => (word === word.toUpperCase() ? word.toLowerCase() : word[0].toLowerCase() + word.slice(1));
  const capitalized = (word: string) => word[0].toUpperCase() + (word === word.toUpperCase() ? word.slice(1).toLowerCase() : word.slice(1));
  return (lowerFirst(words[0]) + words.slice(1).map(capitalized).join("")).slice(0, 64);
}

/** A cell the upload's scan takes for a number: no leading zero (postcodes and phone numbers stay text), at most 15 digits each side. */
export const INFERRED_NUMBER = /^-?(0|[1-9]\d{0,14})(\.\d{1,15})?$/;
/** A cell the upload's scan takes for a boolean. */
export const INFERRED_BOOLEAN = /^(true|false)$/i;
