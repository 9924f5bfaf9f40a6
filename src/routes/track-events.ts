import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { TrackEventRequestSchema, TrackEventResponseSchema } from "../schemas/events";
import { trackEvent } from "../services/events";

const trackRoute = createRoute({
  method: "post",
  path: "/v1/track",
  operationId: "trackEvent",
  tags: ["Events"],
  summary: "Track an event",
  description: [
    "Records a custom event for a contact, creating the contact (subscribed unless `subscribed` says otherwise) or updating it.",
    "`data` is stored on the event and, with a secret key, merged into the contact's data like POST /contacts (a null value removes that key from the contact); a value `{value, persistent: false}` is stored on the event only, as on /v1/send.",
    "Accepts a public key (pk_...) as well as a secret key, and answers CORS (preflight included) for any origin, so browser pages can call it.",
    "A public key sits in browser JavaScript, so what it may do is limited: it never changes an existing contact (`subscribed` and `data` are ignored for it; the event still keeps its `data`), a contact it creates has no data, and its requests count in a rate-limit bucket of their own, separate from the secret key's; its `data` is at most 2,048 characters as JSON (422 naming `data`). Each event records which kind of key sent it (`source` in GET /events).",
    "With the project's double opt-in on (PATCH /project), a contact a public key creates starts unsubscribed and is sent the confirmation template in the same atomic write; it joins marketing audiences only once the recipient confirms through the link (`subscribed: false` from the public key sends no confirmation). Off by default.",
    "The contact and the event are written atomically.",
    "`contact` is the contact's id for a secret key. For a public key it is always the event's id (which is the id of a contact this event created), never an existing contact's id, so a visitor cannot learn whether an address is already a contact, or since when.",
  ].join(" "),
  security: securityScheme,
  request: {
    body: jsonBody(TrackEventRequestSchema),
  },
  responses: {
    200: jsonResponse(TrackEventResponseSchema, "The event was recorded"),
    ...commonErrors,
  },
});

export const trackEventsRouter = createRouter().openapi(trackRoute, async (c) => {
  const { projectId, keyKind, doubleOptIn } = c.get("auth");
  const input = c.req.valid("json");
  const db = getDb(c.env.DB);
  const result = await trackEvent(db, c.env, projectId, input, c.get("afterCommit"), {
    publicKey: keyKind === "public",
    doubleOptIn,
    requestUrl: c.req.url,
  });
  // A public key never learns an existing contact's id (whether an address is on the list, and since when):
  // it is answered the event's id, which is also the id of a contact this event created.
  const contact = keyKind === "public" ? result.eventId : result.contactId;
  return c.json(success({ contact, event: result.eventId, timestamp: result.createdAt.toISOString() }), 200);
});
