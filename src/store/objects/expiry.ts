/**
 * What the bucket's lifecycle rules do in production, done by the cron where there are none
 * (ENVIRONMENT development or test: the local bucket of `npm run dev` and the tests): objects of
 * a prefix older than its keep are deleted, a bounded listing per tick.
 */

/** Keys one tick lists per prefix, at most (one R2 list call; one delete call for what expired of them). */
export const OBJECTS_LISTED_PER_TICK = 1000;

/**
 * Deletes the objects under `prefix` uploaded before `before`, among the first `limit` keys a listing
 * gives (keys that start with their day, as bodies/ does, list oldest first). Returns how many went.
 */
export async function deleteObjectsUploadedBefore(bucket: R2Bucket, prefix: string, before: Date, limit = OBJECTS_LISTED_PER_TICK): Promise<number> {
  const listed = await bucket.list({ prefix, limit });
  const expired = listed.objects.filter((object) => object.uploaded.getTime() < before.getTime()).map((object) => object.key);
  if (expired.length > 0) await bucket.delete(expired);
  return expired.length;
}

/** expiry.ts holds no SQL (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
