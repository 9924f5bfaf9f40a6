import * as z from "../lib/zod";
import { TopicChoicesSchema } from "./topics";
import { EVENT_SOURCES } from "../db/schema";
import { listEnvelope, successEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";
import { DataObjectSchema, EmailAddressSchema, idQuery } from "../lib/validators";
import { MAX_EVENT_NAME } from "./condition-grammar";

/** Custom events: POST /v1/track records one, GET /events and /events/names read them. */

export { MAX_EVENT_NAME };
/** A public key's (pk_) event `data`, as JSON characters; past it 422 naming `data`. */
export const MAX_PUBLIC_EVENT_DATA_CHARS = 2048;

/** An event name: trimmed, 1-100 characters, no control characters. Shared with GET /events' `name` filter. */
export const EventNameSchema = z
  .string()
  .refine((value) => !/\p{Cc}/u.test(value), { message: "Must not contain control characters" })
  .trim()
  .min(1)
  .max(MAX_EVENT_NAME);

export const EventSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    contactId: z.string().nullable(),
    email: z.string().nullable().openapi({ description: "The contact's email" }),
    data: z.record(z.string(), z.unknown()),
    emailId: z.string().nullable().openapi({ description: "The email this event belongs to, for events recorded by sends" }),
    source: z.enum(EVENT_SOURCES).openapi({
      description:
        "Who recorded it: `secret` (a secret key), `public` (a public key, pk_: anyone with the page), `system` (the service: sends, opens, unsubscribes)",
    }),
    createdAt: z.string().datetime(),
  })
  .openapi("Event");
export type EventView = z.infer<typeof EventSchema>;

export const EventListQuerySchema = PaginationQuerySchema.extend({
  name: EventNameSchema.optional().openapi({
    param: { name: "name", in: "query" },
    description: `Only events with exactly this name (trimmed, 1-${MAX_EVENT_NAME} characters)`,
  }),
  contactId: idQuery("contactId", "Only events of this contact"),
});

export const EventListResponseSchema = listEnvelope(EventSchema);

export const EventNamesResponseSchema = successEnvelope(
  z.object({
    items: z.array(z.string()),
    nextCursor: z.null(),
    hasMore: z.literal(false),
    total: z.number().int(),
    counts: z.record(z.string(), z.number().int()),
  }),
);

export const TrackEventRequestSchema = z.object({
  email: EmailAddressSchema,
  event: EventNameSchema.openapi({ example: "signed-up", description: `Event name, 1-${MAX_EVENT_NAME} characters, trimmed` }),
  data: DataObjectSchema.optional(),
  subscribed: z.boolean().optional().openapi({ description: "Sets the contact's subscription; default true for a new contact" }),
  topics: TopicChoicesSchema.optional().openapi({
    description:
      "Secret key only (a public key gets 403 FORBIDDEN): topic choices by key, true opts in (PENDING for a double opt-in topic), false opts out; an unknown key is a 422 naming `topics.<key>`.",
  }),
});
export type TrackEventRequest = z.infer<typeof TrackEventRequestSchema>;

export const TrackEventResponseSchema = successEnvelope(
  z.object({
    contact: z.string().openapi({
      description: "The contact's id; for a public key (pk_) the event's id, which equals the contact's id only when this event created the contact",
    }),
    event: z.string().openapi({ description: "Event id" }),
    timestamp: z.string().datetime(),
  }),
);
