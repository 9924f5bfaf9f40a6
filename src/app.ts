import type { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import type { AppBindings } from "./lib/context";
import { ApiError, handleError, handleNotFound } from "./lib/errors";
import { createRouter, lazyGroups, lazyMiddleware, once } from "./lib/router";
import { Caches, type Clock } from "./lib/caches";
import { requestId } from "./middleware/request-id";
import { noStore } from "./middleware/no-store";
import { HandOver } from "./hand-over";
import { WebhookEventCoalescer } from "./queues";

// Routes, their zod schemas and the services behind them are imported when a
// request first needs them: each path reaches one group of route modules, and
// a group's app (the one middleware chain below plus those routes) is built on
// the group's first request (docs/performance.md "Startup and the first request").

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
  "/suppressions/*",
  "/topics/*",
  "/campaigns/*",
  "/v1/verify",
  "/workflows/*",
  "/project/*",
  "/exports/*",
  "/inbound/*",
];

type App = OpenAPIHono<AppBindings>;

/**
 * Every part of the app in the order it is registered: where two routes'
 * patterns overlap, the earlier answers. Each loads its module and returns
 * what it adds to an app.
 */
const PARTS = {
  health: async () => {
    const { healthRouter } = await import("./routes/health");
    return (app: App) => app.route("/", healthRouter);
  },
  // Before /contacts/{id}, which would take /contacts/imports and /contacts/export.
  contactImports: async () => {
    const { contactImportsRouter } = await import("./routes/contact-imports");
    return (app: App) => app.route("/", contactImportsRouter);
  },
  contacts: async () => {
    const { contactsRouter } = await import("./routes/contacts");
    return (app: App) => app.route("/", contactsRouter);
  },
  domains: async () => {
    const { domainsRouter } = await import("./routes/domains");
    return (app: App) => app.route("/", domainsRouter);
  },
  verifyAddress: async () => {
    const { verifyAddressRouter } = await import("./routes/verify-address");
    return (app: App) => app.route("/", verifyAddressRouter);
  },
  templates: async () => {
    const { templatesRouter } = await import("./routes/templates");
    return (app: App) => app.route("/", templatesRouter);
  },
  trackEvents: async () => {
    const { trackEventsRouter } = await import("./routes/track-events");
    return (app: App) => app.route("/", trackEventsRouter);
  },
  events: async () => {
    const { eventsRouter } = await import("./routes/events");
    return (app: App) => app.route("/", eventsRouter);
  },
  send: async () => {
    const { sendRouter } = await import("./routes/send");
    return (app: App) => app.route("/", sendRouter);
  },
  emails: async () => {
    const { emailsRouter } = await import("./routes/emails");
    return (app: App) => app.route("/", emailsRouter);
  },
  workflows: async () => {
    const { workflowsRouter } = await import("./routes/workflows");
    return (app: App) => app.route("/", workflowsRouter);
  },
  project: async () => {
    const { projectRouter } = await import("./routes/project");
    return (app: App) => app.route("/", projectRouter);
  },
  exports: async () => {
    const { exportsRouter } = await import("./routes/exports");
    return (app: App) => app.route("/", exportsRouter);
  },
  segments: async () => {
    const { segmentsRouter } = await import("./routes/segments");
    return (app: App) => app.route("/", segmentsRouter);
  },
  // /topics and /contacts/{id}/topics.
  topics: async () => {
    const { topicsRouter } = await import("./routes/topics");
    return (app: App) => app.route("/", topicsRouter);
  },
  suppressions: async () => {
    const { suppressionsRouter } = await import("./routes/suppressions");
    return (app: App) => app.route("/", suppressionsRouter);
  },
  // /inbound and /emails/{id}/replies.
  inbound: async () => {
    const { inboundRouter } = await import("./routes/inbound");
    return (app: App) => app.route("/", inboundRouter);
  },
  campaigns: async () => {
    const { campaignsRouter } = await import("./routes/campaigns");
    return (app: App) => app.route("/", campaignsRouter);
  },
  webhooks: async () => {
    const { webhooksRouter } = await import("./routes/webhooks");
    return (app: App) => app.route("/", webhooksRouter);
  },
  devOutbox: async () => {
    const { devOutboxRouter } = await import("./routes/dev-outbox");
    return (app: App) => app.route("/", devOutboxRouter);
  },
  // No API key: signed links (tracking, unsubscribe) and SNS-signed webhooks.
  trackingLinks: async () => {
    const { trackingLinksRouter } = await import("./routes/tracking-links");
    return (app: App) => app.route("/", trackingLinksRouter);
  },
  unsubscribe: async () => {
    const { unsubscribeRouter } = await import("./routes/unsubscribe");
    return (app: App) => app.route("/", unsubscribeRouter);
  },
  confirm: async () => {
    const { confirmRouter } = await import("./routes/confirm");
    return (app: App) => app.route("/", confirmRouter);
  },
  preferences: async () => {
    const { preferencesRouter } = await import("./routes/preferences");
    return (app: App) => app.route("/", preferencesRouter);
  },
  sesFeedback: async () => {
    const { sesFeedbackRouter } = await import("./routes/ses-feedback");
    return (app: App) => app.route("/", sesFeedbackRouter);
  },
  // The reference documents every route registered before it, so its app has all of them.
  openapi: async () => (app: App) => {
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
  },
  docs: async () => {
    const { docsPage } = await import("./routes/docs");
    return (app: App) => app.get("/docs", docsPage);
  },
  // The dashboard's deep links (its files are static assets, served before the Worker).
  dashboard: async () => {
    const { dashboardPage } = await import("./routes/dashboard");
    return (app: App) => {
      app.get("/app", dashboardPage);
      app.get("/app/*", dashboardPage);
    };
  },
};
type Part = keyof typeof PARTS;
const ALL_PARTS = Object.keys(PARTS) as Part[];

/**
 * The parts whose routes can match `path` (Hono's path: decoded, no query),
 * always in PARTS' order: so a path's group answers it exactly as an app of
 * every part would. Paths no route can match get the middleware and the 404.
 */
export function partsFor(path: string): readonly Part[] {
  const [, first, second] = path.split("/");
  switch (first) {
    case "health":
      return ["health"];
    case "contacts":
      if (second === "imports" || second === "export") return ["contactImports", "contacts"];
      return path.split("/")[3] === "topics" ? ["contacts", "topics"] : ["contacts"];
    case "v1":
      return second === "verify" ? ["verifyAddress"] : second === "track" ? ["trackEvents"] : second === "send" ? ["send"] : [];
    case "webhooks":
      return second === "ses" ? ["webhooks", "sesFeedback"] : ["webhooks"];
    case "emails":
      return path.split("/")[3] === "replies" ? ["emails", "inbound"] : ["emails"];
    case "domains":
    case "templates":
    case "events":
    case "workflows":
    case "project":
    case "exports":
    case "segments":
    case "suppressions":
    case "campaigns":
    case "unsubscribe":
    case "confirm":
    case "topics":
    case "inbound":
    case "preferences":
    case "docs":
      return [first as Part];
    case "dev":
      return ["devOutbox"];
    case "t":
      return ["trackingLinks"];
    case "app":
      return ["dashboard"];
    case "openapi.json":
      return ALL_PARTS;
    default:
      return [];
  }
}

export interface AppOptions {
  /** The clock of the rate limiter and every cache (default Date.now); tests inject one they move. */
  now?: Clock;
}

/**
 * The HTTP app: every request goes through the same middleware chain, error
 * handler and 404 as the app of all routes would give it; only the routes of
 * its path's group are built (on that group's first request). One set of
 * caches, rate-limit leases and key cache serves every group (one app per isolate).
 */
export function createApp(options: AppOptions = {}) {
  const caches = new Caches(options.now);
  // What the middleware needs, each imported on its first use and then shared by every group.
  const limiters = once(async () => {
    const { ApiRateLeases, rateLimit } = await import("./middleware/rate-limit");
    const leases = new ApiRateLeases();
    return { api: rateLimit(caches.now, { leases }), send: rateLimit(caches.now, { deferred: true, leases }) };
  });
  const auth = once(async () => {
    const [{ authenticate, refuseWhileSendingPaused }, { cachedKeyLookup }] = await Promise.all([import("./middleware/auth"), import("./services/api-keys")]);
    const lookup = caches.get(cachedKeyLookup);
    return { secret: authenticate({ lookup }), public: authenticate({ allowPublic: true, lookup }), refuseWhileSendingPaused };
  });
  const coalescer = new WebhookEventCoalescer();
  const secretKey = lazyMiddleware(async () => (await auth()).secret);
  const publicKey = lazyMiddleware(async () => (await auth()).public);
  const sendingNotPaused = lazyMiddleware(async () => (await auth()).refuseWhileSendingPaused);
  const limitRate = lazyMiddleware(async () => (await limiters()).api);
  const limitSendRate = lazyMiddleware(async () => (await limiters()).send);
  const sendShape = lazyMiddleware(async () => (await import("./middleware/send-shape")).sendShape);

  /** A group's app: the middleware chain, then the parts' routes, the 404 and the error handler. */
  const build = async (parts: readonly Part[]) => {
    const adds = await Promise.all(parts.map((part) => PARTS[part]()));
    const app = createRouter();

    app.use("*", requestId);
    app.use("*", noStore);
    // The request's one door out (src/hand-over.ts): every batch it commits
    // reports its webhook events and workflow-trigger probes; they go to their
    // queues after the response (waitUntil; without an execution context, a
    // direct app.fetch in a script, unawaited). The cron drains what is left.
    app.use("*", async (c, next) => {
      c.set("caches", caches);
      const handOver = new HandOver(c.env, coalescer);
      c.set("afterCommit", handOver);
      await next();
      const auth = c.get("auth");
      // A write that probed nothing may have left triggers (D1 triggers fill the outbox on every event, contact creation and
      // subscription); a handler that knows it left none says so (noWorkflowTriggers).
      if (auth && c.req.method !== "GET" && c.res.status < 400 && !handOver.probed(auth.projectId)) handOver.mayHaveWorkflowTriggers(auth.projectId);
      if (!handOver.pending) return;
      const flushing = handOver.flush();
      try {
        c.executionCtx.waitUntil(flushing);
      } catch {
        // no execution context: the flush runs unawaited
      }
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
    app.use("/v1/track", publicKey, limitRate);
    for (const path of SECRET_KEY_PATHS) app.use(path, secretKey, limitRate);
    // Sending routes of a project the reputation breaker paused: 403 SENDING_PAUSED (after auth, from its project row).
    app.use("/campaigns/:id/send", sendingNotPaused);
    app.use("/campaigns/:id/test", sendingNotPaused);
    // /webhooks needs a secret key, except the SNS feedback endpoint beside it (SNS-signed, no key).
    app.use("/webhooks/*", async (c, next) => {
      if (c.req.path === "/webhooks/ses") return next();
      await secretKey(c, async () => {
        await limitRate(c, next);
      });
    });
    // /v1/send reads (template, domain, suppressions, contacts) while the limiter answers; it writes only once allowed.
    app.use("/v1/send", secretKey, sendingNotPaused, limitSendRate, sendShape);

    for (const add of adds) add(app);

    app.notFound(handleNotFound);
    // A database guard's abort (a quota, the contact data cap) is the client's error, not a 500.
    app.onError(async (err, c) => {
      const { guardError } = await import("./store/guards");
      return handleError(guardError(err, c.env) ?? err, c);
    });
    return app;
  };

  return lazyGroups(partsFor, build);
}
