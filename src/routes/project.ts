import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, errorResponse, jsonBody, jsonResponse, securityScheme, success, successEnvelope } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { type ConfigInput, readConfig } from "../lib/config";
import { ProjectSettingsSchema, SendingStatusSchema, type SendingStatusView, UpdateProjectSettingsSchema } from "../schemas/project";
import { getProjectSettings, updateProjectSettings } from "../services/project-settings";
import { getSendingStatus, resumeSending, type SendingStatus } from "../services/reputation";

const tags = ["Project"];

const getRoute = createRoute({
  method: "get",
  path: "/project",
  operationId: "getProject",
  tags,
  summary: "Get the project's settings",
  description: "The settings of the key's project. Secret key only.",
  security: securityScheme,
  responses: { 200: jsonResponse(successEnvelope(ProjectSettingsSchema), "The project's settings"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/project",
  operationId: "updateProject",
  tags,
  summary: "Change the project's settings",
  description: [
    "Only the fields given change. Secret key only.",
    'Double opt-in: `{"doubleOptIn": true, "doubleOptInTemplateId": "<template id>"}`. The template must use `{{confirmUrl}}` and have a `from` on a VERIFIED domain of the project; otherwise 422 naming `doubleOptInTemplateId`, and nothing changes. While it is on, that template cannot be deleted.',
    "With double opt-in on, a contact a public key (pk_) creates through POST /v1/track is created unsubscribed and sent the template (transactional, not tracked; variables `confirmUrl`, `email`). The link's page has a Confirm button; confirming subscribes the contact, which starts CONTACT_SUBSCRIBED workflows and records `contact.subscribed`. The link is valid for 7 days. Until then the contact is in no marketing audience. An existing contact is never changed by a public key, so it gets no confirmation email; secret-key writes are not affected.",
  ].join(" "),
  security: securityScheme,
  request: { body: jsonBody(UpdateProjectSettingsSchema) },
  responses: { 200: jsonResponse(successEnvelope(ProjectSettingsSchema), "The updated settings"), ...commonErrors },
});

const BREAKER =
  "The reputation breaker protects the shared sending account: every minute it pauses a project whose permanent-bounce rate is above REPUTATION_MAX_BOUNCE_RATE (default 5 %) or whose complaint rate is above REPUTATION_MAX_COMPLAINT_RATE (default 0.1 %) over the last REPUTATION_WINDOW_DAYS (default 7) UTC days, once it has sent at least REPUTATION_MIN_SENT (default 500) emails in them. While paused, /v1/send, POST /campaigns/{id}/send and /campaigns/{id}/test are 403 SENDING_PAUSED, mail already queued fails (error says why, email.failed webhook event) and workflow SEND_EMAIL steps are skipped; everything else works.";

const statusRoute = createRoute({
  method: "get",
  path: "/project/sending",
  operationId: "getSendingStatus",
  tags,
  summary: "Sending status (reputation breaker)",
  description: BREAKER,
  security: securityScheme,
  responses: { 200: jsonResponse(SendingStatusSchema, "Whether sending is paused, why, and the window's counts"), ...commonErrors },
});

const resumeRoute = createRoute({
  method: "post",
  path: "/project/sending/resume",
  operationId: "resumeSending",
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

/** The settings and the deployment's hot window (how far lists reach back). */
const withHistory = <T>(settings: T, env: ConfigInput) => ({ ...settings, historyDays: readConfig(env).EMAIL_HOT_DAYS });

/** The deployment's inbound domain (INBOUND_DOMAIN), shown with the project's inbound settings. */
const inboundDomainOf = (env: ConfigInput) => readConfig(env).INBOUND_DOMAIN ?? null;

export const projectRouter = createRouter()
  .openapi(getRoute, async (c) =>
    c.json(success(withHistory(await getProjectSettings(getDb(c.env.DB), c.get("auth").projectId, inboundDomainOf(c.env)), c.env)), 200),
  )
  .openapi(updateRoute, async (c) => {
    const settings = await updateProjectSettings(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("json"), inboundDomainOf(c.env));
    return c.json(success(withHistory(settings, c.env)), 200);
  })
  .openapi(statusRoute, async (c) => c.json(view(await getSendingStatus(c.env, c.get("auth").projectId)), 200))
  .openapi(resumeRoute, async (c) => c.json(view(await resumeSending(c.env, c.get("auth").projectId)), 200));
