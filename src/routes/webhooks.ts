import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, errorResponse, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { createRouter } from "../lib/router";
import { IdParamSchema } from "../lib/validators";
import {
  CreateWebhookSchema,
  DeliveryListQuerySchema,
  DeliveryListResponseSchema,
  DeliveryParamsSchema,
  UpdateWebhookSchema,
  WEBHOOK_EVENT_TYPES,
  WebhookDeliverySchema,
  WebhookListResponseSchema,
  WebhookSchema,
  WebhookWithSecretSchema,
} from "../schemas/webhooks";
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  retryDelivery,
  rotateWebhookSecret,
  sendTestEvent,
  toWebhookView,
  updateWebhook,
} from "../services/webhooks/endpoints";

const tags = ["Webhooks"];
const duplicateUrl = { 409: errorResponse("CONFLICT: another endpoint of the project has this URL (normalised); the message and errors[0] name it") };

const ABOUT = [
  "Event webhooks: the project's events posted to your endpoints, signed as Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>`), at least once, never inline in a request. Body: `{type, timestamp, data}`.",
  "",
  `Event types: ${WEBHOOK_EVENT_TYPES.map((t) => `\`${t}\``).join(", ")}.`,
  "",
  "A 2xx is success when its headers arrive within 3 s (`WEBHOOK_CONNECT_TIMEOUT_MS`; acknowledge at once, process later) and the answer within 10 s; anything else (redirects are not followed) is retried after about 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h and 8 h, then the delivery is FAILED. Of a failing answer only its first 200 characters are kept (`lastError`); the rest of the body is not read. An attempt counts when it starts: one whose outcome was never recorded (the invocation died) counts as failed about 2 minutes later. An endpoint whose every delivery failed for 5 days is disabled (`enabled: false`, `disabledReason`).",
  "",
  "Per project: at most 20 endpoints, one per URL (409 CONFLICT for a second); attempts past the per-minute cap (default 1200) wait PENDING and are sent at the cap's pace; past 100,000 PENDING deliveries a new event's deliveries are FAILED at once with the reason in `lastError`. A slow endpoint delays only its own project's deliveries. Events and deliveries count in the project's stored bytes (`QUOTA_STORED_BYTES`). Deliveries are kept 30 days.",
].join("\n");

const listRoute = createRoute({
  method: "get",
  path: "/webhooks",
  operationId: "listWebhooks",
  tags,
  summary: "List webhook endpoints",
  description: `${ABOUT}\n\nNewest first, cursor pagination. The secret is never shown here.`,
  security: securityScheme,
  request: { query: PaginationQuerySchema },
  responses: { 200: jsonResponse(WebhookListResponseSchema, "A page of endpoints"), ...commonErrors },
});

const createWebhookRoute = createRoute({
  method: "post",
  path: "/webhooks",
  operationId: "createWebhook",
  tags,
  summary: "Create a webhook endpoint",
  description:
    "The answer carries `secret` (`whsec_...`), shown only here and on rotation: keep it to verify signatures. `events` omitted or `[]`: every type; an unknown type is a 422 naming `events.<i>`. Outside development the URL must be https (port 443, 80 or 8443) on a public host: private, loopback, link-local and other internal addresses are refused in every IPv4 and IPv6 spelling, here and again before every call (after DNS resolution). One endpoint per URL and project: a URL another endpoint of the project has (compared normalised: scheme and host case, default port, trailing dot and fragment ignored) is 409 CONFLICT naming that endpoint in `message` and `errors[0]` (`url`, `duplicate_url`); subscribe it to more types instead. 403 QUOTA_EXCEEDED past 20 endpoints.",
  security: securityScheme,
  request: { body: jsonBody(CreateWebhookSchema) },
  responses: { 201: jsonResponse(WebhookWithSecretSchema, "The new endpoint, with its secret (shown once)"), ...commonErrors, ...duplicateUrl },
});

const getRoute = createRoute({
  method: "get",
  path: "/webhooks/{id}",
  operationId: "getWebhook",
  tags,
  summary: "Get a webhook endpoint",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(WebhookSchema, "The endpoint (without its secret)"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/webhooks/{id}",
  operationId: "updateWebhook",
  tags,
  summary: "Update a webhook endpoint",
  description:
    "Only the fields given change. `enabled: true` enables a disabled endpoint again and clears `disabledReason`. A `url` another endpoint of the project has (normalised as on create) is 409 CONFLICT naming it, and so is enabling an endpoint that was disabled as a duplicate of another.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateWebhookSchema) },
  responses: { 200: jsonResponse(WebhookSchema, "The updated endpoint (without its secret)"), ...commonErrors, ...duplicateUrl },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/webhooks/{id}",
  operationId: "deleteWebhook",
  tags,
  summary: "Delete a webhook endpoint",
  description: "Nothing more is sent to it; its delivery log goes with retention.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

const rotateRoute = createRoute({
  method: "post",
  path: "/webhooks/{id}/rotate-secret",
  operationId: "rotateWebhookSecret",
  tags,
  summary: "Rotate the signing secret",
  description:
    "Answers the endpoint with its new `secret` (shown once). For 24 hours the old secret keeps signing beside the new one: `webhook-signature` carries two `v1,` signatures separated by a space, so a receiver with either secret verifies. A second rotation within the 24 hours drops the oldest.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(WebhookWithSecretSchema, "The endpoint with its new secret"), ...commonErrors },
});

const deliveriesRoute = createRoute({
  method: "get",
  path: "/webhooks/{id}/deliveries",
  operationId: "listWebhookDeliveries",
  tags,
  summary: "List an endpoint's deliveries",
  description:
    "One delivery per event and endpoint, newest first, cursor pagination; `status` filters. `nextAttemptAt` is set while a retry is due. Deliveries are kept `WEBHOOK_RETENTION_DAYS` (30), inside the hot window (`EMAIL_HOT_DAYS`, 90), so the list shows every one kept; with a retention longer than the window, older deliveries are archived to R2 and not listed.",
  security: securityScheme,
  request: { params: IdParamSchema, query: DeliveryListQuerySchema },
  responses: { 200: jsonResponse(DeliveryListResponseSchema, "A page of deliveries"), ...commonErrors },
});

const retryRoute = createRoute({
  method: "post",
  path: "/webhooks/{id}/deliveries/{deliveryId}/retry",
  operationId: "retryWebhookDelivery",
  tags,
  summary: "Send a delivery again now",
  description:
    "Queues one more attempt now, whatever the delivery's status (same `webhook-id`); answers the delivery as it is then (`PENDING`). The outcome shows in the delivery log. 400 INVALID_STATE while the endpoint is disabled.",
  security: securityScheme,
  request: { params: DeliveryParamsSchema },
  responses: { 200: jsonResponse(WebhookDeliverySchema, "The delivery, queued"), ...commonErrors },
});

const testRoute = createRoute({
  method: "post",
  path: "/webhooks/{id}/test",
  operationId: "testWebhook",
  tags,
  summary: "Send a test event",
  description:
    "Queues one `webhook.test` event to this endpoint only (whatever its `events`), delivered like any other; answers its delivery (`PENDING`). 400 INVALID_STATE while the endpoint is disabled.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(WebhookDeliverySchema, "The test event's delivery, queued"), ...commonErrors },
});

export const webhooksRouter = createRouter()
  .openapi(listRoute, async (c) => c.json(success(await listWebhooks(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"))), 200))
  .openapi(createWebhookRoute, async (c) => c.json(await createWebhook(c.env, c.get("auth").projectId, c.req.valid("json")), 201))
  .openapi(getRoute, async (c) => c.json(toWebhookView(await getWebhook(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id)), 200))
  .openapi(updateRoute, async (c) =>
    c.json(toWebhookView(await updateWebhook(c.env, c.get("auth").projectId, c.req.valid("param").id, c.req.valid("json"))), 200),
  )
  .openapi(deleteRoute, async (c) => {
    await deleteWebhook(c.env, c.get("auth").projectId, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(rotateRoute, async (c) => c.json(await rotateWebhookSecret(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id), 200))
  .openapi(deliveriesRoute, async (c) =>
    c.json(success(await listDeliveries(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id, c.req.valid("query"))), 200),
  )
  .openapi(retryRoute, async (c) => {
    const { id, deliveryId } = c.req.valid("param");
    return c.json(await retryDelivery(getDb(c.env.DB), c.env, c.get("auth").projectId, id, deliveryId), 200);
  })
  .openapi(testRoute, async (c) => c.json(await sendTestEvent(getDb(c.env.DB), c.env, c.get("auth").projectId, c.req.valid("param").id), 200));
