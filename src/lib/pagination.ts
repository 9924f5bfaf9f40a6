import * as z from "./zod";
import { and, count, desc, lt, type InferSelectModel, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { base64UrlToBytes, toBase64Url, utf8ToBase64 } from "./base64";
import { ApiError } from "./errors";

/** Query parameters shared by every cursor-paginated list. */
export const PaginationQuerySchema = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(20)
    .openapi({ param: { name: "limit", in: "query" }, example: 20, description: "Page size, 1 to 100" }),
  cursor: z
    .string()
    .max(512)
    .optional()
    .openapi({ param: { name: "cursor", in: "query" }, description: "Opaque cursor from the previous page" }),
});

/**
 * Cursors are opaque to clients: base64url of the last row's id. Lists order by
 * id (UUIDv7, time ordered), so "the rows after this id" is a stable keyset page.
 */
export function encodeCursor(lastId: string): string {
  return toBase64Url(utf8ToBase64(JSON.stringify({ k: lastId })));
}

export function decodeCursor(cursor: string | undefined): string | undefined {
  if (!cursor) return undefined;
  try {
    const bytes = base64UrlToBytes(cursor);
    const parsed = JSON.parse(bytes ? new TextDecoder().decode(bytes) : "") as { k?: unknown };
    if (typeof parsed.k === "string" && parsed.k.length > 0 && parsed.k.length <= 64) return parsed.k;
  } catch {
    // fall through to the validation error
  }
  throw ApiError.validation([{ field: "cursor", message: "Invalid cursor", code: "invalid_cursor" }]);
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Rows were fetched with `limit + 1`; the extra row only says whether there is more. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return { items, hasMore, nextCursor: hasMore ? encodeCursor(items[items.length - 1].id) : null };
}

/**
 * One page of a project-scoped table, newest first: keyset on the UUIDv7 id
 * (`id < cursor`, served by a (project_id, ..., id) index) and the total
 * matching `where`, both in one D1 batch.
 */
export async function listNewestFirst<T extends SQLiteTable & { id: SQLiteColumn }>(
  db: Database,
  table: T,
  where: SQL | undefined,
  page: { limit: number; cursor?: string },
): Promise<Page<InferSelectModel<T>> & { total: number }> {
  const after = decodeCursor(page.cursor);
  const [rows, [{ total }]] = await db.batch([
    db
      .select()
      .from(table as SQLiteTable)
      .where(after ? and(where, lt(table.id, after)) : where)
      .orderBy(desc(table.id))
      .limit(page.limit + 1),
    db
      .select({ total: count() })
      .from(table as SQLiteTable)
      .where(where),
  ]);
  type Row = InferSelectModel<T>;
  const { items, nextCursor, hasMore } = toPage(rows as { id: string }[], page.limit);
  return { items: items as Row[], nextCursor, hasMore, total };
}
