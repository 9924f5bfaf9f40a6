/**
 * The signed reply address of an email: `r+<email id, 32 hex><signature, 20 hex>@<INBOUND_DOMAIN>`.
 * Lowercase hex survives MTAs that fold an address's case; the local part stays under 64 octets.
 * The token names the email only; its project is read from the email row, so a token of another
 * project's email is that email's, never this recipient's choice.
 */

import { timingSafeEqual } from "../../lib/crypto";
import { signHex } from "../tracking/signing";

const PURPOSE_REPLY = "reply";
const SIGNATURE_BYTES = 10;
const TOKEN = /^r\+([0-9a-f]{32})([0-9a-f]{20})$/;

const compact = (emailId: string) => emailId.replaceAll("-", "").toLowerCase();
/** A UUID from its 32 hex digits. */
export const uuidOf = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

/** `r+<token>@<inboundDomain>` for an email id (a UUID). */
export async function replyAddress(secret: string, inboundDomain: string, emailId: string): Promise<string> {
  const id = compact(emailId);
  return `r+${id}${await signHex(secret, SIGNATURE_BYTES, PURPOSE_REPLY, id)}@${inboundDomain.toLowerCase()}`;
}

/**
 * The email id a recipient address stands for, or null when it is not a reply address on
 * `inboundDomain` or its signature is forged. `secrets`: the current signing secret, then the previous one.
 */
export async function readReplyAddress(secrets: string | readonly string[], inboundDomain: string, address: string): Promise<string | null> {
  const at = address.lastIndexOf("@");
  if (at <= 0 || address.slice(at + 1).toLowerCase() !== inboundDomain.toLowerCase()) return null;
  const match = TOKEN.exec(address.slice(0, at).toLowerCase());
  if (!match) return null;
  const [, id, signature] = match as unknown as [string, string, string];
  for (const secret of typeof secrets === "string" ? [secrets] : secrets) {
    if (timingSafeEqual(await signHex(secret, SIGNATURE_BYTES, PURPOSE_REPLY, id), signature)) return uuidOf(id);
  }
  return null;
}
