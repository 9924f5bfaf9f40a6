import { createRoute, z } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme, successEnvelope } from "../lib/openapi";
import { DataObjectSchema, EmailAddressSchema } from "../lib/validators";
import { trackEvent } from "../services/events";

export const MAX_EVENT_NAME = 100;

/** An event name: trimmed, 1-100 characters, no control characters. Shared with GET /events' `name` filter. */
export const EventNameSchema = z
  .string()
  .refine((value) => !/\p{Cc}/u.test(value), { message: "Must not contain control characters" })
  .trim()
  .min(1)
  .max(MAX_EVENT_NAME);

const trackRoute = createRoute({
  method: "post",
  path: "/v1/track",
  tags: ["Events"],
  summary: "Track an event",
  description: [
    "Records a custom event for a contact, creating the contact (subscribed unless `subscribed` says otherwise) or updating it.",
    "`data` is stored on the event and, with a secret key, merged into the contact's data like POST /contacts (a null value removes that key from the contact); a value `{value, persistent: false}` is stored on the event only, as on /v1/send.",
    "Accepts a public key (pk_...) as well as a secret key, and answers CORS (preflight included) for any origin, so browser pages can call it.",
    "A public key sits in browser JavaScript, so what it may do is limited: it never changes an existing contact (`subscribed` and `data` are ignored for it; the event still keeps its `data`), a contact it creates has no data, and its requests count in a rate-limit bucket of their own, separate from the secret key's.",
    "The contact and the event are written atomically.",
  ].join(" "),
  security: securityScheme,
  request: {
    body: jsonBody(
      z.object({
        email: EmailAddressSchema,
        event: EventNameSchema.openapi({ example: "signed-up", description: `Event name, 1-${MAX_EVENT_NAME} characters, trimmed` }),
        data: DataObjectSchema.optional(),
        subscribed: z.boolean().optional().openapi({ description: "Sets the contact's subscription; default true for a new contact" }),
      }),
    ),
  },
  responses: {
    200: jsonResponse(
      successEnvelope(
        z.object({
          contact: z.string().openapi({ description: "Contact id" }),
          event: z.string().openapi({ description: "Event id" }),
          timestamp: z.string().datetime(),
        }),
      ),
      "The event was recorded",
    ),
    ...commonErrors,
  },
});

export const trackEventsRouter = createRouter().openapi(trackRoute, async (c) => {
  const { projectId, keyKind } = c.get("auth");
  const input = c.req.valid("json");
  const db = getDb(c.env.DB);
  const result = await trackEvent(db, c.env, projectId, input, { publicKey: keyKind === "public" });
  c.set("workflowTriggersPending", result.workflowTriggersPending);
  return c.json(
    {
      success: true as const,
      data: { contact: result.contactId, event: result.eventId, timestamp: result.createdAt.toISOString() },
    },
    200,
  );
});
