/**
 * A send's attachments in R2 (prefix `attachments/`, kept EMAIL_HTML_RETENTION_DAYS): one object
 * per attachment, `attachments/<projectId>/<sendId>/<position>`, holding its content as the
 * request gave it (base64 without whitespace), so the send consumer puts it into the MIME message
 * unchanged. POST /v1/send puts the objects before the D1 batch that writes the rows naming them:
 * a send refused by that batch leaves objects no row names, which the lifecycle rule removes.
 */

export const ATTACHMENTS_PREFIX = "attachments/";

export const attachmentKey = (projectId: string, sendId: string, position: number) => `${ATTACHMENTS_PREFIX}${projectId}/${sendId}/${position}`;

/** Puts each content (base64 text) as its own object; returns their keys and bytes, in order. */
export async function putAttachments(
  bucket: R2Bucket,
  projectId: string,
  sendId: string,
  contents: readonly string[],
): Promise<{ key: string; bytes: number }[]> {
  return Promise.all(
    contents.map(async (content, position) => {
      const key = attachmentKey(projectId, sendId, position);
      // Base64 is ASCII: its length is its size in bytes.
      await bucket.put(key, content);
      return { key, bytes: content.length };
    }),
  );
}

/** An attachment's content (base64); throws when the object is gone (expired), so the send is retried and then fails. */
export async function readAttachment(bucket: R2Bucket, key: string): Promise<string> {
  const object = await bucket.get(key);
  if (!object) throw new Error(`attachment object ${key} is missing`);
  return object.text();
}

/** No SQL here (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
