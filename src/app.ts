import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { ApiError, handleError, handleNotFound } from "./lib/errors";
import { guardError } from "./store/guards";
import { createRouter } from "./lib/router";
import { authenticate, refuseWhileSendingPaused } from "./middleware/auth";
import { ApiRateLeases, rateLimit } from "./middleware/rate-limit";
import { Caches, type Clock } from "./lib/caches";
import { requestId } from "./middleware/request-id";
import { noStore } from "./middleware/no-store";
import { contactImportsRouter } from "./routes/contact-imports";
import { sendShape } from "./middleware/send-shape";
import { contactsRouter } from "./routes/contacts";
import { devOutboxRouter } from "./routes/dev-outbox";
import { emailsRouter } from "./routes/emails";
import { campaignsRouter } from "./routes/campaigns";
import { segmentsRouter } from "./routes/segments";
import { projectRouter } from "./routes/project";
import { confirmRouter } from "./routes/confirm";
import { sendRouter } from "./routes/send";
import { docsPage } from "./routes/docs";
import { dashboardPage } from "./routes/dashboard";
import { domainsRouter } from "./routes/domains";
import { healthRouter } from "./routes/health";
import { verifyAddressRouter } from "./routes/verify-address";
import { eventsRouter } from "./routes/events";
import { templatesRouter } from "./routes/templates";
import { trackEventsRouter } from "./routes/track-events";
import { trackingLinksRouter } from "./routes/tracking-links";
import { unsubscribeRouter } from "./routes/unsubscribe";
import { sesFeedbackRouter } from "./routes/ses-feedback";
import { webhooksRouter } from "./routes/webhooks";
import { workflowsRouter } from "./routes/workflows";
import { getDb } from "./db/client";
import { dispatchWorkflowTriggers } from "./services/workflows/triggers";
import { cachedKeyLookup } from "./services/api-keys";
import { WebhookHandover } from "./services/webhooks/deliver";

/** Largest accepted request body. /v1/send carries base64 attachments (7,000,000 bytes decoded). */
export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_SEND_BODY_BYTES = 15 * 1024 * 1024;

/** Paths that need a secret (sk_) key. /v1/track also takes a public (pk_) key. */
// Each prefix once: Hono's "/x/*" also matches "/x", and a path listed twice
// would run auth and the rate limiter twice for one request.
const SECRET_KEY_PATHS = [
  "/contacts/*",
  "/templates/*",
  "/events/*",
  "/domains/*",
  "/emails/*",
  "/segments/*",
  "/campaigns/*",
  "/v1/verify",
  "/workflows/*",
  "/project/*",
];

export interface AppOptions {
  /** The clock of the rate limiter and every cache (default Date.now); tests inject one they move. */
  now?: Clock;
}

export function createApp(options: AppOptions = {}) {
  const app = createRouter();
  // One set of caches and rate-limit leases for every route of this app (one app per isolate).
  const caches = new Caches(options.now);
  const leases = new ApiRateLeases();
  const limitRate = rateLimit(caches.now, { leases });
  const webhookHandover = new WebhookHandover();
  const lookup = caches.get(cachedKeyLookup);

  app.use("*", requestId);
  app.use("*", noStore);
  app.use("*", async (c, next) => {
    c.set("caches", caches);
    // Webhook events a request recorded go to the queue after the response, coalesced per isolate;
    // without an execution context (direct app.fetch in a script) the send still runs, unawaited.
    const later = (work: Promise<void>) => {
      try {
        c.executionCtx.waitUntil(work);
      } catch {
        // the cron drains whatever it does not send
      }
      return Promise.resolve();
    };
    c.set("webhookHandOver", {
      events: (projectId, eventIds) => later(webhookHandover.handOver(c.env, projectId, eventIds)),
      rows: (rows) => later(webhookHandover.handOverRows(c.env, rows)),
    });
    await next();
  });
  // Writes may have recorded workflow triggers (D1 triggers fill an outbox on
  // every event, contact creation and subscription, whatever path made them):
  // hand this project's to the workflow queue once the response is ready. The
  // cron drains whatever a path without a key (unsubscribe pages) left.
  app.use("*", async (c, next) => {
    await next();
    const auth = c.get("auth");
    if (!auth || c.req.method === "GET" || c.res.status >= 400 || c.get("workflowTriggersPending") === false) return;
    let waitUntil: (promise: Promise<unknown>) => void;
    try {
      const ctx = c.executionCtx;
      waitUntil = (promise) => ctx.waitUntil(promise);
    } catch {
      return; // no execution context (direct app.fetch in a script): the cron drains
    }
    waitUntil(dispatchWorkflowTriggers(getDb(c.env.DB), c.env, auth.projectId).catch((err) => console.error("workflow trigger dispatch failed", err)));
  });
  // Webhook events a write recorded (c.set("webhookEvents", ids)) go to the
  // webhook queue once the response is ready (webhookHandOver).
  app.use("*", async (c, next) => {
    await next();
    const ids = c.get("webhookEvents");
    const auth = c.get("auth");
    if (ids?.length && auth) await c.get("webhookHandOver").events(auth.projectId, ids);
  });
  // POST /contacts/imports counts its own CSV as it streams (50 MB): bodyLimit would buffer a body without Content-Length.
  app.use("*", (c, next) =>
    c.req.path === "/contacts/imports"
      ? next()
      : bodyLimit({
          maxSize: c.req.path === "/v1/send" ? MAX_SEND_BODY_BYTES : MAX_BODY_BYTES,
          onError: () => {
            throw new ApiError("PAYLOAD_TOO_LARGE", "Request body is too large", {
              suggestion: `Bodies are limited to ${MAX_BODY_BYTES} bytes (${MAX_SEND_BODY_BYTES} for /v1/send).`,
            });
          },
        })(c, next),
  );

  // Browser pages on any origin may post events with a public key.
  app.use(
    "/v1/track",
    cors({
      origin: "*",
      allowMethods: ["POST", "OPTIONS"],
      allowHeaders: ["Authorization", "Content-Type"],
      exposeHeaders: ["X-Request-Id", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"],
      maxAge: 86400,
    }),
  );
  app.use("/v1/track", authenticate({ allowPublic: true, lookup }), limitRate);
  for (const path of SECRET_KEY_PATHS) app.use(path, authenticate({ lookup }), limitRate);
  // Sending routes of a project the reputation breaker paused: 403 SENDING_PAUSED (after auth, from its project row).
  app.use("/campaigns/:id/send", refuseWhileSendingPaused);
  app.use("/campaigns/:id/test", refuseWhileSendingPaused);
  // /webhooks needs a secret key, except the SNS feedback endpoint beside it (SNS-signed, no key).
  const webhookAuth = authenticate({ lookup });
  app.use("/webhooks/*", async (c, next) => {
    if (c.req.path === "/webhooks/ses") return next();
    await webhookAuth(c, async () => {
      await limitRate(c, next);
    });
  });
  // /v1/send reads (template, domain, suppressions, contacts) while the limiter answers; it writes only once allowed.
  app.use("/v1/send", authenticate({ lookup }), refuseWhileSendingPaused, rateLimit(caches.now, { deferred: true, leases }), sendShape);

  app.route("/", healthRouter);
  // Before /contacts/{id}, which would take /contacts/imports and /contacts/export.
  app.route("/", contactImportsRouter);
  app.route("/", contactsRouter);
  app.route("/", domainsRouter);
  app.route("/", verifyAddressRouter);
  app.route("/", templatesRouter);
  app.route("/", trackEventsRouter);
  app.route("/", eventsRouter);
  app.route("/", sendRouter);
  app.route("/", emailsRouter);
  app.route("/", workflowsRouter);
  app.route("/", projectRouter);
  app.route("/", segmentsRouter);
  app.route("/", campaignsRouter);
  app.route("/", webhooksRouter);
  app.route("/", devOutboxRouter);
  // No API key: signed links (tracking, unsubscribe) and SNS-signed webhooks.
  app.route("/", trackingLinksRouter);
  app.route("/", unsubscribeRouter);
  app.route("/", confirmRouter);
  app.route("/", sesFeedbackRouter);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "Secret key (sk_...) for every endpoint; public key (pk_...) only for POST /v1/track.",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    servers: [{ url: "/", description: "This deployment: paths are relative to the origin serving this document" }],
    info: {
      title: "Edge Mail API",
      version: "1.0.0",
      description: [
        "Email delivery on Cloudflare's edge, wire-compatible with Plunk's public API.",
        "",
        "Errors always use one envelope: `{success: false, error: {code, message, statusCode, requestId, errors?, suggestion?}, timestamp}`; every response carries `X-Request-Id`.",
        "Rate limit: 1000 requests per minute per project (RATE_LIMIT_PER_MINUTE), never more; each Worker isolate takes slots of the minute from the project's counter a few at a time, so with several isolates a few slots may go unused and a request be refused slightly early. A 429 carries `Retry-After` and `RateLimit-*` headers.",
        `Request bodies are limited to ${MAX_BODY_BYTES} bytes (${MAX_SEND_BODY_BYTES} for /v1/send); larger ones get 413.`,
      ].join("\n"),
    },
  });
  app.get("/docs", docsPage);
  // The dashboard's deep links (its files are static assets, served before the Worker).
  app.get("/app", dashboardPage);
  app.get("/app/*", dashboardPage);

  app.notFound(handleNotFound);
  // A database guard's abort (a quota, the contact data cap) is the client's error, not a 500.
  app.onError((err, c) => handleError(guardError(err, c.env) ?? err, c));
  return app;
}
