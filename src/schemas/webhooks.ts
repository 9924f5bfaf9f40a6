import * as z from "../lib/zod";
import { WEBHOOK_DELIVERY_STATUSES } from "../db/schema";
import { listEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";

/** Event webhooks: the /webhooks resource (CONTRACT.md "Webhooks"). */

/** Every event type an endpoint can subscribe to. `webhook.test` only comes from POST /webhooks/{id}/test. */
export const WEBHOOK_EVENT_TYPES = [
  "email.sent",
  "email.delivered",
  "email.delivery_delayed",
  "email.bounced",
  "email.complained",
  "email.opened",
  "email.clicked",
  "email.failed",
  "email.suppressed",
  "email.received",
  "contact.created",
  "contact.updated",
  "contact.deleted",
  "contact.subscribed",
  "contact.unsubscribed",
  "contact.topics.updated",
  "campaign.sent",
  "domain.verified",
  "domain.failed",
  "workflow.execution.completed",
  "workflow.execution.failed",
  "contacts.imported",
  "suppression.created",
  "suppression.deleted",
  "webhook.test",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const MAX_WEBHOOK_URL = 2048;
export const MAX_WEBHOOK_DESCRIPTION = 500;

const WebhookUrlSchema = z.string().trim().min(1).max(MAX_WEBHOOK_URL).openapi({
  example: "https://example.com/hooks/edge-mail",
  description: "Where events are posted. Outside development: https, port 443, 80 or 8443, and a public host (checked here and before every call).",
});

const EventsSchema = z
  .array(z.enum(WEBHOOK_EVENT_TYPES, { message: `Unknown event type; one of ${WEBHOOK_EVENT_TYPES.join(", ")}` }))
  .max(WEBHOOK_EVENT_TYPES.length)
  .transform((types) => [...new Set(types)])
  .openapi({ description: "Event types to receive; omitted or [] means every type", example: ["email.delivered", "email.bounced"] });

export const WebhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()).openapi({ description: "[] means every type" }),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabledReason: z.string().nullable().openapi({ description: "Why the service disabled it (every delivery failed for 5 days); null otherwise" }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Webhook");
export type WebhookView = z.infer<typeof WebhookSchema>;

export const WebhookWithSecretSchema = WebhookSchema.extend({
  secret: z.string().openapi({
    description: "`whsec_` + base64 of 32 random bytes: verifies `webhook-signature` (Standard Webhooks). Shown only here and on rotation.",
  }),
}).openapi("WebhookWithSecret");
export type WebhookWithSecretView = z.infer<typeof WebhookWithSecretSchema>;

export const CreateWebhookSchema = z
  .object({
    url: WebhookUrlSchema,
    events: EventsSchema.optional(),
    description: z.string().trim().max(MAX_WEBHOOK_DESCRIPTION).nullable().optional(),
    enabled: z.boolean().optional().openapi({ description: "Default true" }),
  })
  .strict()
  .openapi("CreateWebhook");
export type CreateWebhookRequest = z.infer<typeof CreateWebhookSchema>;

export const UpdateWebhookSchema = z
  .object({
    url: WebhookUrlSchema.optional(),
    events: EventsSchema.optional(),
    description: z.string().trim().max(MAX_WEBHOOK_DESCRIPTION).nullable().optional(),
    enabled: z.boolean().optional().openapi({ description: "true enables a disabled endpoint again and clears disabledReason" }),
  })
  .strict()
  .openapi("UpdateWebhook");
export type UpdateWebhookRequest = z.infer<typeof UpdateWebhookSchema>;

export const WebhookDeliverySchema = z
  .object({
    id: z.string(),
    webhookId: z.string(),
    eventId: z.string(),
    type: z.string(),
    status: z.enum(WEBHOOK_DELIVERY_STATUSES),
    attempts: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("WebhookDelivery");
export type WebhookDeliveryView = z.infer<typeof WebhookDeliverySchema>;

export const DeliveryListQuerySchema = PaginationQuerySchema.extend({
  status: z
    .enum(WEBHOOK_DELIVERY_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" }, description: "Only deliveries in this status" }),
});
export type DeliveryListQuery = z.infer<typeof DeliveryListQuerySchema>;

export const DeliveryParamsSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "id", in: "path" } }),
  deliveryId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "deliveryId", in: "path" } }),
});

export const WebhookListResponseSchema = listEnvelope(WebhookSchema);
export const DeliveryListResponseSchema = listEnvelope(WebhookDeliverySchema);
