/** Named bounds of the platform, and the two ways a list is cut to fit them. */

/** Ids per `IN (...)` list: D1 allows 100 bound parameters per statement. */
export const IN_LIST_IDS = 90;
/** Messages per Queue sendBatch (the Queues limit). */
export const QUEUE_BATCH = 100;
/** Ids per statement that carries them as one JSON parameter (json_each), kept small. */
export const IDS_PER_JSON_STATEMENT = 500;
/** Characters of one JSON parameter (json_each rows): well under D1's 2 MB per value. */
export const MAX_JSON_PARAM_CHARS = 800_000;

/** `items` in consecutive slices of at most `size`. */
export const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/**
 * Strings (JSON rows) in consecutive groups whose lengths, plus a separator
 * each, add up to at most `maxChars`; a string longer than that goes alone.
 */
export function chunkBySize(parts: readonly string[], maxChars: number): string[][] {
  const out: string[][] = [];
  let group: string[] = [];
  let chars = 0;
  for (const part of parts) {
    if (group.length > 0 && chars + part.length > maxChars) {
      out.push(group);
      group = [];
      chars = 0;
    }
    group.push(part);
    chars += part.length + 1;
  }
  if (group.length > 0) out.push(group);
  return out;
}
