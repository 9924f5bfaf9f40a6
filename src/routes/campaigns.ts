import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { ApiError } from "../lib/errors";
import { commonErrors, jsonBody, jsonResponse, securityScheme, successEnvelope, success } from "../lib/openapi";
import { EmailAddressSchema, IdParamSchema } from "../lib/validators";
import { createRouter } from "../lib/router";
import {
  campaignStats,
  cancelCampaign,
  createCampaign,
  deleteCampaign,
  getCampaign,
  listCampaigns,
  sendCampaign,
  sendTestEmail,
  toCampaignView,
  updateCampaign,
} from "../services/campaigns";
import { pauseCampaign, resumeCampaign } from "../services/campaigns/pause";
import {
  type CampaignInput,
  type CreateCampaignInput,
  CampaignListQuerySchema,
  CampaignListResponseSchema,
  CampaignResponseSchema,
  CampaignStatsResponseSchema,
  CreateCampaignSchema,
  SendSchema,
  UpdateCampaignSchema,
  withAlias,
} from "../schemas/campaigns";

const tags = ["Campaigns"];
const envelope = (description: string) => jsonResponse(CampaignResponseSchema, description);

const listRoute = createRoute({
  method: "get",
  path: "/campaigns",
  operationId: "listCampaigns",
  tags,
  summary: "List campaigns",
  description:
    "Newest first. Page with `page` (1-based) or with the opaque `cursor` from `nextCursor` (stable while campaigns are added). `limit` is the page size (1-100).",
  security: securityScheme,
  request: {
    query: CampaignListQuerySchema,
  },
  responses: {
    200: jsonResponse(CampaignListResponseSchema, "A page of campaigns"),
    ...commonErrors,
  },
});

const createCampaignRoute = createRoute({
  method: "post",
  path: "/campaigns",
  operationId: "createCampaign",
  tags,
  summary: "Create a campaign (DRAFT)",
  security: securityScheme,
  request: { body: jsonBody(CreateCampaignSchema) },
  responses: { 201: envelope("The new campaign"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/campaigns/{id}",
  operationId: "getCampaign",
  tags,
  summary: "Get a campaign",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: envelope("The campaign"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/campaigns/{id}",
  operationId: "updateCampaign",
  tags,
  summary: "Update a campaign",
  description: "Only in DRAFT or SCHEDULED (400 INVALID_STATE otherwise); only the fields given change.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateCampaignSchema) },
  responses: { 200: envelope("The updated campaign"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/campaigns/{id}",
  operationId: "deleteCampaign",
  tags,
  summary: "Delete a DRAFT campaign",
  description: "Only DRAFT campaigns (cancel a SCHEDULED one first); sent campaigns stay for their statistics.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

const sendRoute = createRoute({
  method: "post",
  path: "/campaigns/{id}/send",
  operationId: "sendCampaign",
  tags,
  summary: "Send now or schedule",
  description:
    "Body (optional): `{scheduledFor?: string | null}`. From DRAFT or SCHEDULED. Without `scheduledFor`: SENDING now; the audience (subscribed, unsuppressed contacts matching it when sending starts; contacts created later are not added) gets one email each, and the campaign becomes SENT when every email is sent or failed. With a future `scheduledFor`: SCHEDULED. An empty audience is 400 INVALID_STATE; a past or malformed `scheduledFor` is 422. The body may be omitted. The emails count toward the emails-per-day quota, all or nothing: an audience larger than what is left of today's quota is 429 QUOTA_EXCEEDED with Retry-After (nothing is sent), one larger than a whole day's quota is 403 QUOTA_EXCEEDED; a scheduled campaign that does not fit when due is postponed to the next 00:00 UTC.",
  security: securityScheme,
  request: { params: IdParamSchema, body: { required: false, content: { "application/json": { schema: SendSchema } } } },
  responses: { 200: envelope("The campaign, SENDING or SCHEDULED"), ...commonErrors },
});
// The body is optional (the spec allows none, with or without a JSON content type), so the handler
// parses it; the router registers a copy without the body (no validator), the document the full route.
const sendRouteHandled = { ...sendRoute, request: { params: IdParamSchema }, hide: true };

const cancelRoute = createRoute({
  method: "post",
  path: "/campaigns/{id}/cancel",
  operationId: "cancelCampaign",
  tags,
  summary: "Cancel a scheduled campaign",
  description: "SCHEDULED -> DRAFT with scheduledAt null; any other state is 400 INVALID_STATE.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: envelope("The campaign, back in DRAFT"), ...commonErrors },
});

const pauseRoute = createRoute({
  method: "post",
  path: "/campaigns/{id}/pause",
  operationId: "pauseCampaign",
  tags,
  summary: "Pause a sending campaign",
  description:
    "A SENDING campaign stops: no email of it leaves (mail already handed to the provider is gone) until it is resumed; its status stays SENDING with `paused: true`. Not SENDING, or paused already: 409 CONFLICT.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: envelope("The campaign, paused"), ...commonErrors },
});

const resumeRoute = createRoute({
  method: "post",
  path: "/campaigns/{id}/resume",
  operationId: "resumeCampaign",
  tags,
  summary: "Resume a paused campaign",
  description:
    "`paused: false`: the recipients who have not got it yet get it, each once (emails are claimed once; the audience walk goes on from where it stopped). Not paused: 409 CONFLICT.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: envelope("The campaign, sending again"), ...commonErrors },
});

const TestSendSchema = z
  .object({
    email: EmailAddressSchema.openapi({ description: "Where the test goes" }),
    contactId: z.string().min(1).max(64).optional().openapi({
      description: "Render with this contact's data instead of the data of the contact at `email` (`{{email}}` is still the test address)",
    }),
  })
  .strict();

const testRoute = createRoute({
  method: "post",
  path: "/campaigns/{id}/test",
  operationId: "sendCampaignTest",
  tags,
  summary: "Send a test email",
  description:
    "One email to `email`, subject prefixed `[TEST] `. Rendered with the data of the contact `contactId` when it is given (a contact of this project; any other id, another project's among them, is 404 NOT_FOUND and nothing is sent), otherwise with the data of the contact at `email` when the address is one (no data when it is not). Not tracked and never counted in the campaign's stats; it goes out with transactional mail.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(TestSendSchema) },
  responses: { 200: jsonResponse(successEnvelope(z.object({ email: z.string().openapi({ description: "Email record id" }) })), "Queued"), ...commonErrors },
});

const statsRoute = createRoute({
  method: "get",
  path: "/campaigns/{id}/stats",
  operationId: "getCampaignStats",
  tags,
  summary: "Campaign statistics",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(CampaignStatsResponseSchema, "Statistics"), ...commonErrors },
});

/** The send body is optional; when present it must be a JSON object. */
async function scheduledForOf(request: Request): Promise<Date | null> {
  const text = await request.text();
  if (!text.trim()) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ApiError("INVALID_JSON", "Request body is not valid JSON");
  }
  const parsed = SendSchema.safeParse(json);
  if (!parsed.success) {
    throw ApiError.validation(parsed.error.issues.map((i) => ({ field: i.path.join(".") || "body", message: i.message, code: i.code })));
  }
  return parsed.data.scheduledFor ? new Date(parsed.data.scheduledFor) : null;
}

export const campaignsRouter = createRouter()
  .openapi(listRoute, async (c) => c.json(await listCampaigns(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query")), 200))
  .openapi(createCampaignRoute, async (c) => {
    const campaign = await createCampaign(getDb(c.env.DB), c.env, c.get("auth").projectId, withAlias(c.req.valid("json")) as CreateCampaignInput);
    return c.json(success(toCampaignView(campaign)), 201);
  })
  .openapi(getRoute, async (c) => {
    return c.json(success(toCampaignView(await getCampaign(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id))), 200);
  })
  .openapi(updateRoute, async (c) => {
    const changes = withAlias(c.req.valid("json")) as Partial<CampaignInput>;
    const campaign = await updateCampaign(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id, changes);
    return c.json(success(toCampaignView(campaign)), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteCampaign(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(sendRouteHandled, async (c) => {
    const scheduledFor = await scheduledForOf(c.req.raw);
    const campaign = await sendCampaign(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id, scheduledFor);
    return c.json(success(toCampaignView(campaign)), 200);
  })
  .openapi(cancelRoute, async (c) => {
    return c.json(success(toCampaignView(await cancelCampaign(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id))), 200);
  })
  .openapi(pauseRoute, async (c) => {
    return c.json(success(toCampaignView(await pauseCampaign(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id))), 200);
  })
  .openapi(resumeRoute, async (c) => {
    return c.json(success(toCampaignView(await resumeCampaign(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id))), 200);
  })
  .openapi(testRoute, async (c) => {
    const { projectId } = c.get("auth");
    const { email, contactId } = c.req.valid("json");
    const emailId = await sendTestEmail(getDb(c.env.DB), c.env, projectId, c.req.valid("param").id, email, c.req.url, contactId);
    return c.json(success({ email: emailId }), 200);
  })
  .openapi(statsRoute, async (c) => {
    return c.json(success(await campaignStats(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id)), 200);
  });

campaignsRouter.openAPIRegistry.registerPath(sendRoute);
