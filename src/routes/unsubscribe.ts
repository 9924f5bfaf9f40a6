import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppBindings } from "../lib/context";
import { linkVerificationSecrets } from "../lib/config";
import { assertClientWithinLimit } from "../middleware/client-limit";
import { ApiError } from "../lib/errors";
import { escapeHtml, htmlPage, tryAgainPage } from "../lib/html";
import { errorResponse } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { parseUnsubscribeToken, parseLinkId } from "../services/tracking/links";
import { shardDb, shardEnv, shardsFrom } from "../db/shards";
import { emailExists, unsubscribeByEmail } from "../services/tracking/unsubscribe";
import { heldByMove } from "../services/tracking/held";
import { MOVE_RETRY_SECONDS, projectMovingError, shardsInMovesCache } from "../services/shards/moving";

const tags = ["Unsubscribe"];

const TokenParam = z.object({
  token: z.string().openapi({ param: { name: "token", in: "path" }, description: "Signed token from the email's unsubscribe link" }),
});

const NO_CACHE = { "Cache-Control": "no-store" };

const pageRoute = createRoute({
  method: "get",
  path: "/unsubscribe/{token}",
  operationId: "getUnsubscribePage",
  security: [],
  tags,
  summary: "Unsubscribe confirmation page",
  description:
    "The link in mail (`{{unsubscribeUrl}}`, List-Unsubscribe). Needs no key: the signed token identifies the email, and through it the address and project. Shows a page with an Unsubscribe button and changes nothing: link scanners and previews that open URLs must not unsubscribe anyone. The button POSTs the form to this same URL.",
  request: { params: TokenParam },
  responses: {
    200: { description: "Confirmation page with the Unsubscribe button", content: { "text/html": { schema: z.string() } } },
    400: { description: "Invalid or forged link (HTML page)", content: { "text/html": { schema: z.string() } } },
    404: { description: "The email of this link no longer exists (HTML page)", content: { "text/html": { schema: z.string() } } },
  },
});

const oneClickRoute = createRoute({
  method: "post",
  path: "/unsubscribe/{token}",
  operationId: "unsubscribe",
  security: [],
  tags,
  summary: "One-click unsubscribe (RFC 8058)",
  description:
    "Unsubscribes. What mail clients call for `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058), and what the confirmation page's button submits: a form body `List-Unsubscribe=One-Click` (application/x-www-form-urlencoded or multipart/form-data). Needs no key. Idempotent. Sets the address's contact in the email's project to unsubscribed (creating it unsubscribed if it was deleted, so the address stays out of marketing mail) and records `contact.unsubscribed` once. Answers an HTML page to the page's form, plain text otherwise.",
  request: {
    params: TokenParam,
    body: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": { schema: z.object({ "List-Unsubscribe": z.literal("One-Click") }) },
        "multipart/form-data": { schema: z.object({ "List-Unsubscribe": z.literal("One-Click") }) },
      },
    },
  },
  responses: {
    200: {
      description: "Unsubscribed (also when already unsubscribed)",
      content: { "text/plain": { schema: z.string() }, "text/html": { schema: z.string() } },
    },
    400: errorResponse("Invalid or forged token, or a body without List-Unsubscribe=One-Click"),
    404: errorResponse("The email of this link no longer exists"),
    503: errorResponse(
      "The email's project is moving to another database (a few minutes): nothing was changed; try again after Retry-After. The page's form gets an HTML page saying so.",
    ),
  },
});

/** The page's form: the same one-click body a mail client sends, plus where it came from. */
const confirmForm = (token: string) =>
  `<form method="post" action="/unsubscribe/${escapeHtml(encodeURIComponent(token))}">` +
  `<input type="hidden" name="List-Unsubscribe" value="One-Click"><input type="hidden" name="source" value="page">` +
  `<button type="submit">Unsubscribe</button></form>`;

/** The email and data shard a token names (links.ts linkId), or null when it is malformed or forged. */
async function emailIdOf(c: Context<AppBindings>, token: string) {
  const id = await parseUnsubscribeToken(linkVerificationSecrets(c.env), token);
  return id ? parseLinkId(id) : null;
}

async function readForm(c: Context<AppBindings>): Promise<Record<string, unknown>> {
  const type = (c.req.header("Content-Type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/x-www-form-urlencoded or multipart/form-data", {
      suggestion: "Send the form body List-Unsubscribe=One-Click (RFC 8058).",
    });
  }
  try {
    return await c.req.parseBody();
  } catch {
    throw new ApiError("BAD_REQUEST", "The form body could not be read");
  }
}

export const unsubscribeRouter = createRouter();

unsubscribeRouter
  .openapi(pageRoute, async (c) => {
    const { token } = c.req.valid("param");
    const named = await emailIdOf(c, token);
    if (!named) {
      return htmlPage(c, 400, "Invalid unsubscribe link", "This link is not valid. Please use the unsubscribe link exactly as it appears in the email.");
    }
    let exists = false;
    for (const shard of shardsFrom(c.env, named.shard)) {
      exists = await emailExists(getDb(shardDb(c.env, shard)), named.emailId);
      if (exists) break;
    }
    if (!exists) {
      return htmlPage(c, 404, "Link expired", "The message this link belongs to no longer exists, so there is nothing to unsubscribe from.");
    }
    return htmlPage(c, 200, "Unsubscribe?", "Press the button to stop receiving these emails.", confirmForm(token));
  })
  // Registered without a body validator: the form is read and checked by hand so that
  // a wrong content type or value is a 400 as RFC 8058 clients expect, never a 422.
  .post("/unsubscribe/:token", async (c) => {
    await assertClientWithinLimit(c.env, "unsubscribe", c.req.raw.headers);
    const { token } = c.req.param();
    const named = await emailIdOf(c, token);
    if (!named) throw new ApiError("BAD_REQUEST", "Invalid unsubscribe token");
    const form = await readForm(c);
    if (form["List-Unsubscribe"] !== "One-Click") {
      throw new ApiError("BAD_REQUEST", "The body must be List-Unsubscribe=One-Click", {
        suggestion: "See RFC 8058: POST the form field List-Unsubscribe with the value One-Click.",
      });
    }
    const fromPage = form.source === "page";
    // The link's shard first; the others only when the email is not there (its project moved since).
    let outcome: Awaited<ReturnType<typeof unsubscribeByEmail>> = "unknown-email";
    for (const shard of shardsFrom(c.env, named.shard)) {
      const env = shardEnv(c.env, shard);
      // Its project moving between shards: 503, nothing written (it could be lost in the copy); the same link works after.
      if (await heldByMove(c.env, shard, getDb(env.DB), named.emailId, c.get("caches").get(shardsInMovesCache))) {
        if (fromPage) return tryAgainPage(c, MOVE_RETRY_SECONDS);
        throw projectMovingError();
      }
      outcome = await unsubscribeByEmail(getDb(env.DB), named.emailId, fromPage ? "page" : "one-click", env, c.get("afterCommit"));
      if (outcome !== "unknown-email") break;
    }
    if (outcome === "unknown-email") throw ApiError.notFound("Email");
    if (fromPage) return htmlPage(c, 200, "You are unsubscribed", "You will no longer receive these emails. You can close this page.");
    return c.body("Unsubscribed", 200, { "Content-Type": "text/plain; charset=utf-8", ...NO_CACHE });
  });

unsubscribeRouter.openAPIRegistry.registerPath(oneClickRoute);
