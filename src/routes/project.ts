import { createRoute } from "@hono/zod-openapi";
import { commonErrors, errorResponse, jsonResponse, securityScheme } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { getSendingStatus, resumeSending, type SendingStatus } from "../services/reputation";
import { SendingStatusSchema, type SendingStatusView } from "../schemas/project";

const tags = ["Project"];

const BREAKER =
  "The reputation breaker protects the shared sending account: every minute it pauses a project whose permanent-bounce rate is above REPUTATION_MAX_BOUNCE_RATE (default 5 %) or whose complaint rate is above REPUTATION_MAX_COMPLAINT_RATE (default 0.1 %) over the last REPUTATION_WINDOW_DAYS (default 7) UTC days, once it has sent at least REPUTATION_MIN_SENT (default 500) emails in them. While paused, /v1/send, POST /campaigns/{id}/send and /campaigns/{id}/test are 403 SENDING_PAUSED, mail already queued fails (error says why, email.failed webhook event) and workflow SEND_EMAIL steps are skipped; everything else works.";

const statusRoute = createRoute({
  method: "get",
  path: "/project/sending",
  tags,
  summary: "Sending status (reputation breaker)",
  description: BREAKER,
  security: securityScheme,
  responses: { 200: jsonResponse(SendingStatusSchema, "Whether sending is paused, why, and the window's counts"), ...commonErrors },
});

const resumeRoute = createRoute({
  method: "post",
  path: "/project/sending/resume",
  tags,
  summary: "Resume sending after a reputation pause",
  description:
    "Resumes a paused project and starts a fresh window (its counts start again from zero). The owner may do this once per window: a second resume within REPUTATION_WINDOW_DAYS of the last is 403 SENDING_PAUSED, and only the operator can resume it (`npm run project -- resume <id>`). A project that is not paused is left as it is (200 with its status).",
  security: securityScheme,
  responses: {
    200: jsonResponse(SendingStatusSchema, "The status after the resume"),
    ...commonErrors,
    403: errorResponse("Public key, disabled project, or SENDING_PAUSED: already resumed through the API within the window"),
  },
});

const view = (status: SendingStatus): SendingStatusView => ({ ...status, pausedAt: status.pausedAt?.toISOString() ?? null });

export const projectRouter = createRouter()
  .openapi(statusRoute, async (c) => c.json(view(await getSendingStatus(c.env, c.get("auth").projectId)), 200))
  .openapi(resumeRoute, async (c) => c.json(view(await resumeSending(c.env, c.get("auth").projectId)), 200));
