import { eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emails } from "../../db/schema";
import type { ShardId } from "../../db/shards";
import type { Env } from "../../env";
import { isMoving, type shardsInMovesCache, shardInMove } from "../shards/moving";

/**
 * Whether a key-less write for an email (a signed link's unsubscribe, confirm, open or click) must not
 * happen now: the email's project is moving between shards, and a row written to the shard being copied
 * from after its table was copied would be lost. The email's project is read only when its shard is in a move.
 */
export async function heldByMove(env: Env, shard: ShardId, db: Database, emailId: string, moves?: ReturnType<typeof shardsInMovesCache>): Promise<boolean> {
  if (!(await shardInMove(env, shard, moves))) return false;
  const [row] = await db.select({ projectId: emails.projectId }).from(emails).where(eq(emails.id, emailId)).limit(1);
  return row !== undefined && (await isMoving(env, row.projectId));
}
