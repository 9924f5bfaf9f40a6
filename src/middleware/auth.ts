import { createMiddleware } from "hono/factory";
import { getDb } from "../db/client";
import { controlDb, rememberRoute, shardEnv } from "../db/shards";
import type { AppBindings } from "../lib/context";
import { assertClientWithinLimit } from "./client-limit";
import { ApiError } from "../lib/errors";
import { cachedKeyLookup, isWellFormedKey, type KeyLookup } from "../services/api-keys";
import { sendingPausedError } from "../services/reputation";
import { isWrite, projectMovingError } from "../services/shards/moving";

/**
 * Resolves `Authorization: Bearer <key>` to a project.
 * 401: missing, malformed or unknown key. 403: a disabled project, or a public
 * key on a route that did not opt into public keys (`allowPublic`).
 * `lookup` resolves a key (default: a cache of its own; the app passes one
 * cache shared by every route, see cachedKeyLookup for the staleness bound).
 */
export const authenticate = (options: { allowPublic?: boolean; lookup?: KeyLookup } = {}) => {
  const lookup = options.lookup ?? cachedKeyLookup();
  return createMiddleware<AppBindings>(async (c, next) => {
    const header = c.req.header("Authorization");
    if (!header) {
      throw new ApiError("UNAUTHORIZED", "Missing API key", {
        suggestion: "Send Authorization: Bearer <sk_... key>.",
      });
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match || !isWellFormedKey(match[1])) {
      throw new ApiError("UNAUTHORIZED", "Malformed API key", {
        suggestion: "Keys look like sk_ or pk_ followed by 48 hex characters.",
      });
    }
    // A key no cache knows costs a hash and a D1 query: limited per client (a flood of made-up keys).
    const owner = await lookup(getDb(controlDb(c.env)), match[1], () => assertClientWithinLimit(c.env, "key-lookup", c.req.raw.headers));
    if (!owner) throw new ApiError("UNAUTHORIZED", "Invalid API key");
    if (owner.projectDisabled) throw new ApiError("PROJECT_DISABLED", "This project is disabled");
    if (owner.kind === "public" && !options.allowPublic) {
      throw new ApiError("FORBIDDEN", "Public keys (pk_) can only be used on POST /v1/track", {
        suggestion: "Use a secret key (sk_) from your server for this endpoint.",
      });
    }
    // A project moving between shards (npm run project -- move) reads but does not write until the move ends.
    if (owner.movingTo !== null && isWrite(c.req.method)) throw projectMovingError();
    c.set("auth", { projectId: owner.projectId, keyKind: owner.kind, doubleOptIn: owner.doubleOptIn, sendingPaused: owner.sendingPaused, shard: owner.shard });
    // From here on the request runs on the project's data shard: c.env.DB is that shard (control tables: controlDb(c.env)).
    rememberRoute(owner.projectId, { shard: owner.shard, movingTo: owner.movingTo });
    c.env = shardEnv(c.env, owner.shard);
    await next();
  });
};

/**
 * After `authenticate`, on the routes that send mail (/v1/send, campaign sends
 * and test sends): 403 SENDING_PAUSED while the reputation breaker has paused
 * the project. Read from the key lookup's project row: no extra D1 round trip.
 */
export const refuseWhileSendingPaused = createMiddleware<AppBindings>(async (c, next) => {
  const { sendingPaused } = c.get("auth");
  if (sendingPaused !== null) throw sendingPausedError(sendingPaused);
  await next();
});
