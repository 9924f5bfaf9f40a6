import type { Email } from "../../db/schema";
import { type ConfigInput, readConfig } from "../../lib/config";
import { readBody } from "../../store/objects/bodies";

const DAY_MS = 86_400_000;

/**
 * The HTML an email was sent with (GET /emails/{id} `html`), wherever it is kept: in D1 until it
 * is sent (and for mail that failed, until the retention purge empties it), then in R2 by its
 * body_ref (a ranged GET). Null once EMAIL_HTML_RETENTION_DAYS have passed since it was sent
 * (the R2 lifecycle rule deletes the object then) or when its object is gone.
 */
export async function sentHtml(bucket: R2Bucket, email: Email, env: ConfigInput, now = Date.now()): Promise<string | null> {
  if (email.bodyRef) {
    const sentAt = (email.sentAt ?? email.createdAt).getTime();
    if (now - sentAt > readConfig(env).EMAIL_HTML_RETENTION_DAYS * DAY_MS) return null;
    return readBody(bucket, email.bodyRef);
  }
  return email.html === "" ? null : email.html;
}
