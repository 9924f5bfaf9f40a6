import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { linkVerificationSecrets } from "../lib/config";
import type { AppBindings } from "../lib/context";
import { ApiError } from "../lib/errors";
import { errorResponse } from "../lib/openapi";
import { createRouter } from "../lib/router";
import type { Engagement } from "../services/emails/status";
import { countedEngagements, recordLinkEngagement } from "../services/tracking/engagement-once";
import { isTrackableUrl, parseLinkId, verifyClickSignature, verifyOpenSignature } from "../services/tracking/links";
import { shardEnv, shardIds, shardsFrom } from "../db/shards";
import { emailExists } from "../services/tracking/unsubscribe";
import { heldByMove } from "../services/tracking/held";
import { shardsInMovesCache } from "../services/shards/moving";

const tags = ["Tracking"];

/** A 1x1 transparent GIF. */
const PIXEL = Uint8Array.from(atob("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"), (ch) => ch.charCodeAt(0));

const NO_CACHE = {
  "Cache-Control": "no-store, no-cache, must-revalidate, private, max-age=0",
  Pragma: "no-cache",
  Expires: "0",
};

const EmailIdParam = z.object({
  emailId: z.string().openapi({ param: { name: "emailId", in: "path" }, description: "The email's id" }),
});

const openRoute = createRoute({
  method: "get",
  path: "/t/o/{emailId}",
  operationId: "trackOpen",
  security: [],
  tags,
  summary: "Open-tracking pixel",
  description:
    "Put in mail by the service. Needs no key. Records an `email.opened` event when the signature is valid and the project has tracking on; repeats within 60 seconds of the email's last counted open (privacy proxies, reloads) are not counted again, nor opens while the email's project is moving to another database (a few minutes). Always answers the image, so a mail client never shows a broken picture.",
  request: {
    params: EmailIdParam,
    query: z.object({ s: z.string().optional().openapi({ description: "Signature of the link" }) }),
  },
  responses: {
    200: { description: "A 1x1 transparent GIF", content: { "image/gif": { schema: z.string().openapi({ format: "binary" }) } } },
  },
});

const clickRoute = createRoute({
  method: "get",
  path: "/t/c/{emailId}",
  operationId: "trackClick",
  security: [],
  tags,
  summary: "Click-tracking redirect",
  description:
    "Put in mail by the service. Needs no key. Records an `email.clicked` event and redirects to `u`, but only when `s` is this service's signature over the email id and `u`: it is not an open redirect. Clicks within 60 seconds of the email's last counted click (link scanners) are not counted again, nor clicks while the email's project is moving to another database (a few minutes), and a failure to record never stops the redirect.",
  request: {
    params: EmailIdParam,
    query: z.object({
      u: z.string().optional().openapi({ description: "The original link (absolute http or https URL)" }),
      s: z.string().optional().openapi({ description: "Signature over the email id and u" }),
    }),
  },
  responses: {
    302: { description: "Redirect to the original link" },
    400: errorResponse("Missing or forged signature, or a URL that is not http(s)"),
  },
});

/**
 * One open or click, through the request's engagement cache and door, on the data shard the signed link id names
 * (links.ts linkId). Not counted there and the email not there either (its project moved since the mail was sent):
 * the other shards in turn. One shard: one try, as before shards.
 */
async function record(c: Context<AppBindings>, id: string, kind: Engagement, extra: { url?: string }) {
  const { emailId, shard: named } = parseLinkId(id);
  for (const shard of shardsFrom(c.env, named)) {
    const env = shardEnv(c.env, shard);
    const db = getDb(env.DB);
    // Its project moving between shards: not counted (a row written now could be lost in the copy); the link still works.
    const held = () => heldByMove(c.env, shard, db, emailId, c.get("caches").get(shardsInMovesCache));
    const outcome = await recordLinkEngagement(
      db,
      env,
      c.get("caches").get(countedEngagements),
      c.req.raw.headers,
      emailId,
      kind,
      extra,
      c.get("afterCommit"),
      held,
    );
    if (outcome !== "not counted") return outcome === "counted";
    if (shardIds(c.env).length === 1 || (await emailExists(db, emailId))) return false;
  }
  return false;
}

/** Records an open or click unless the email is unknown or its project has tracking turned off. */
export const trackingLinksRouter = createRouter()
  .openapi(openRoute, async (c) => {
    const { emailId } = c.req.valid("param");
    const { s } = c.req.valid("query");
    const secrets = linkVerificationSecrets(c.env);
    if (await verifyOpenSignature(secrets, emailId, s)) {
      try {
        await record(c, emailId, "OPENED", {});
      } catch (err) {
        // The image is served either way; a lost open is better than a broken picture.
        console.error("recording an open failed", emailId, err);
      }
    }
    return c.body(PIXEL, 200, { "Content-Type": "image/gif", "Content-Length": String(PIXEL.length), ...NO_CACHE });
  })
  .openapi(clickRoute, async (c) => {
    const { emailId } = c.req.valid("param");
    const { u, s } = c.req.valid("query");
    const secrets = linkVerificationSecrets(c.env);
    if (!u || !s || !(await verifyClickSignature(secrets, emailId, u, s))) {
      throw new ApiError("BAD_REQUEST", "This tracking link is invalid or was altered", {
        suggestion: "Use the link exactly as it appears in the email.",
      });
    }
    if (!isTrackableUrl(u)) throw new ApiError("BAD_REQUEST", "This tracking link does not point to an http(s) URL");
    try {
      await record(c, emailId, "CLICKED", { url: u });
    } catch (err) {
      // The reader gets to the link either way; a lost click is better than a dead link.
      console.error("recording a click failed", emailId, err);
    }
    return c.body(null, 302, { Location: new URL(u).href, "Referrer-Policy": "no-referrer", ...NO_CACHE });
  });
