/**
 * Raw received mail in R2 (prefix `inbound/`, kept INBOUND_RETENTION_DAYS by the bucket's
 * lifecycle rule; locally by the cron's object expiry): one object per message,
 * `inbound/<projectId>/<yyyy-mm-dd>/<inboundId>.eml`, exactly the bytes Email Routing handed the
 * email() handler. Counted in r2_usage under the prefix, in the batch that writes the row.
 */

export const INBOUND_PREFIX = "inbound/";

export const inboundKey = (projectId: string, inboundId: string, at: Date) => `${INBOUND_PREFIX}${projectId}/${at.toISOString().slice(0, 10)}/${inboundId}.eml`;

/**
 * Streams the raw message to R2 without holding it in memory: R2 needs the length up front,
 * so the stream goes through a FixedLengthStream of `size` (the message's rawSize); a stream
 * that turns out longer or shorter fails the put.
 */
export async function putInboundRaw(bucket: R2Bucket, key: string, raw: ReadableStream<Uint8Array>, size: number): Promise<void> {
  const fixed = new FixedLengthStream(size);
  const [, put] = await Promise.all([raw.pipeTo(fixed.writable), bucket.put(key, fixed.readable, { httpMetadata: { contentType: "message/rfc822" } })]);
  if (!put) throw new Error(`inbound object ${key} was not written`);
}

/** The raw message, or null when its object is gone (expired). */
export function getInboundRaw(bucket: R2Bucket, key: string): Promise<R2ObjectBody | null> {
  return bucket.get(key);
}

/** Deletes a raw message whose row was not written (a refused batch). */
export async function deleteInboundRaw(bucket: R2Bucket, key: string): Promise<void> {
  await bucket.delete(key);
}

/** No SQL here (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
