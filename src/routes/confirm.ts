import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppBindings } from "../lib/context";
import { assertClientWithinLimit } from "../middleware/client-limit";
import { linkVerificationSecrets } from "../lib/config";
import { escapeHtml, htmlPage, tryAgainPage } from "../lib/html";
import { errorResponse } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { confirmSubscription, findConfirmation } from "../services/tracking/confirm";
import { parseConfirmToken, parseLinkId } from "../services/tracking/links";
import { hasShard, shardDb, shardEnv, shardsFrom } from "../db/shards";
import { heldByMove } from "../services/tracking/held";
import { MOVE_RETRY_SECONDS, shardsInMovesCache } from "../services/shards/moving";

const tags = ["Double opt-in"];

const TokenParam = z.object({
  token: z.string().openapi({ param: { name: "token", in: "path" }, description: "Signed token from the confirmation email's `{{confirmUrl}}`" }),
});

const html = (description: string) => ({ description, content: { "text/html": { schema: z.string() } } });

const pageRoute = createRoute({
  method: "get",
  path: "/confirm/{token}",
  operationId: "getConfirmationPage",
  security: [],
  tags,
  summary: "Double opt-in confirmation page",
  description:
    "The link in a double opt-in confirmation email (`{{confirmUrl}}`, see PATCH /project). Needs no key: the signed token names the email, and through it the project and the contact. Shows a page with a Confirm button and changes nothing, so link scanners and previews that open URLs confirm no one. The button POSTs to this same URL. A link works for 7 days after its email was created, and confirms once: after the contact unsubscribes, the same link answers 410 and subscribes no one.",
  request: { params: TokenParam },
  responses: {
    200: html("Page with the Confirm button (or saying the subscription is already confirmed)"),
    400: html("Invalid or forged link"),
    404: html("The email or its contact no longer exists"),
    410: html("The link is more than 7 days old, or was used already and the contact has unsubscribed since"),
  },
});

const confirmRoute = createRoute({
  method: "post",
  path: "/confirm/{token}",
  operationId: "confirmSubscription",
  security: [],
  tags,
  summary: "Confirm a subscription (double opt-in)",
  description:
    "Subscribes the contact the confirmation email was sent to, in that email's project: its CONTACT_SUBSCRIBED workflows and the CONTACT_CREATED ones it did not start while unconfirmed start, `contact.subscribed` is recorded (event and webhook) once. Needs no key and no body. Idempotent while the contact stays subscribed; single-use otherwise: once a link has confirmed its contact, it never subscribes them again (410 after they unsubscribe), so a forwarded or replayed link cannot undo an unsubscribe. A forged token, or one made for another purpose (an unsubscribe token), is refused and changes nothing.",
  request: { params: TokenParam },
  responses: {
    200: html("Confirmed (also when it already was)"),
    400: html("Invalid or forged link"),
    404: html("The email or its contact no longer exists"),
    410: html("The link is more than 7 days old, or was used already and the contact has unsubscribed since"),
    429: errorResponse("Too many confirm requests from this client (per IP, a minute)"),
    503: html("The email's project is moving to another database (a few minutes): nothing was changed; try again after Retry-After"),
  },
});

const invalid = (c: Context<AppBindings>) =>
  htmlPage(c, 400, "Invalid confirmation link", "This link is not valid. Please use the link exactly as it appears in the email.");
const gone = (c: Context<AppBindings>, outcome: "unknown" | "expired" | "used") =>
  outcome === "expired"
    ? htmlPage(c, 410, "Link expired", "This confirmation link is more than 7 days old. Sign up again to get a new one.")
    : outcome === "used"
      ? htmlPage(c, 410, "Link already used", "This link confirmed the subscription before, and it has been cancelled since. Sign up again to subscribe.")
      : htmlPage(c, 404, "Nothing to confirm", "The message or the subscription this link belongs to no longer exists.");

const confirmForm = (token: string) =>
  `<form method="post" action="/confirm/${escapeHtml(encodeURIComponent(token))}"><button type="submit">Confirm</button></form>`;

export const confirmRouter = createRouter();

confirmRouter
  .openapi(pageRoute, async (c) => {
    const { token } = c.req.valid("param");
    const id = await parseConfirmToken(linkVerificationSecrets(c.env), token);
    if (!id) return invalid(c);
    const { emailId, shard: named } = parseLinkId(id);
    // The link's shard first; the others only when the email is not there (its project moved since).
    let found = await findConfirmation(getDb(shardDb(c.env, hasShard(c.env, named) ? named : 0)), emailId);
    for (const shard of shardsFrom(c.env, named).slice(1)) {
      if (found.outcome !== "unknown") break;
      found = await findConfirmation(getDb(shardDb(c.env, shard)), emailId);
    }
    if (found.outcome !== "valid") return gone(c, found.outcome);
    const topicsPending = found.pendingTopics.length > 0;
    if (found.subscribed && !topicsPending)
      return htmlPage(c, 200, "Subscription confirmed", "Your subscription is already confirmed. You can close this page.");
    if (found.used && !topicsPending) return gone(c, "used");
    return htmlPage(c, 200, "Confirm your subscription", "Press the button to confirm that you want to receive these emails.", confirmForm(token));
  })
  .openapi(confirmRoute, async (c) => {
    await assertClientWithinLimit(c.env, "confirm", c.req.raw.headers);
    const { token } = c.req.valid("param");
    const id = await parseConfirmToken(linkVerificationSecrets(c.env), token);
    if (!id) return invalid(c);
    const { emailId, shard: named } = parseLinkId(id);
    let confirmed: Awaited<ReturnType<typeof confirmSubscription>> = { outcome: "unknown" };
    for (const shard of shardsFrom(c.env, named)) {
      const env = shardEnv(c.env, shard);
      // Its project moving between shards: 503, nothing written (it could be lost in the copy); the same link works after.
      if (await heldByMove(c.env, shard, getDb(env.DB), emailId, c.get("caches").get(shardsInMovesCache))) return tryAgainPage(c, MOVE_RETRY_SECONDS);
      confirmed = await confirmSubscription(getDb(env.DB), env, emailId, c.get("afterCommit"));
      if (confirmed.outcome !== "unknown") break;
    }
    const { outcome, projectId } = confirmed;
    if (outcome === "unknown" || outcome === "expired" || outcome === "used") return gone(c, outcome);
    // CONTACT_SUBSCRIBED workflows: the D1 trigger filled the outbox; the request's door dispatches them after the response.
    if (outcome === "confirmed" && projectId) c.get("afterCommit").mayHaveWorkflowTriggers(projectId);
    return htmlPage(c, 200, "Subscription confirmed", "Thank you: your subscription is confirmed. You can close this page.");
  });
