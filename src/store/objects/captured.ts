/**
 * Raw mail kept by the local `capture` provider in R2 (prefix `captured/`, kept
 * EMAIL_HTML_RETENTION_DAYS): the messages of one flush are one object
 * `captured/<yyyy-mm-dd>/<id>`, one after another, and each captured_messages row keeps its
 * key, byte offset and size (GET /dev/outbox reads it back with a ranged GET). Not counted in
 * r2_usage: it stands in for the provider's outbox, not for what a project stores.
 */

import { newId } from "../../lib/ids";

export const CAPTURED_PREFIX = "captured/";

const encoder = new TextEncoder();

/** Puts these raw messages as one object; returns its key and each message's offset and size (bytes), in order. */
export async function putCapturedMail(
  bucket: R2Bucket,
  raws: readonly string[],
  at: Date,
): Promise<{ key: string; places: { offset: number; size: number }[] }> {
  const parts = raws.map((raw) => encoder.encode(raw));
  const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  const places: { offset: number; size: number }[] = [];
  let offset = 0;
  for (const part of parts) {
    body.set(part, offset);
    places.push({ offset, size: part.length });
    offset += part.length;
  }
  const key = `${CAPTURED_PREFIX}${at.toISOString().slice(0, 10)}/${newId()}`;
  await bucket.put(key, body);
  return { key, places };
}

/** One captured message's raw text, or null when its object expired. */
export async function readCapturedMail(bucket: R2Bucket, ref: { key: string; offset: number; size: number }): Promise<string | null> {
  if (ref.size === 0) return "";
  const object = await bucket.get(ref.key, { range: { offset: ref.offset, length: ref.size } });
  return object ? object.text() : null;
}

/** No SQL here (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
