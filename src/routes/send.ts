import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { commonErrors, errorResponse, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { verifiedDomainCache } from "../services/domains";
import { acceptSend } from "../services/send/accept";
import { SendRequestSchema, SendResponseSchema, IdempotencyKeySchema } from "../schemas/send";

const sendRoute = createRoute({
  method: "post",
  path: "/v1/send",
  operationId: "sendEmail",
  tags: ["Sending"],
  summary: "Send transactional email",
  description: [
    "Accepts the email, stores one email record per recipient and queues it; nothing is sent inside the request.",
    "Each recipient's contact is created or its data updated (new contacts are unsubscribed unless `subscribed: true`; `subscribed` never changes an existing contact's subscription). An existing contact the send brings no change to is not written: its `updatedAt` stays.",
    "With `template`, the template's subject, body, from and reply-to are used and request fields override them.",
    "The `from` domain must be VERIFIED for the project (403 DOMAIN_NOT_VERIFIED).",
    "A MARKETING template is refused (400 INVALID_STATE, nothing queued, no contact changed) if any recipient is an unsubscribed contact, even with `subscribed: true`: that flag opts in new contacts but never re-subscribes someone who unsubscribed.",
    "Recipients that bounced permanently or complained are not sent to; they are listed in `suppressed`.",
    "Template variables come from the request's `data` first and the recipient's stored contact data second.",
    "`Idempotency-Key` (1-255 printable ASCII, per project, kept 24 h): the same key with the same body returns the first answer again (200, the same email ids) and sends nothing; the same key with a different body is 409 CONFLICT (the key names one request). Requests with one key that arrive at once send once: each answers the first one's response (or 409 if its body differs). Only an accepted send is recorded, so a request refused with 4xx leaves its key free for the corrected retry.",
    "CR or LF in any address, name, subject or header value is a 422; custom headers cannot set From, To, Subject, Message-ID, DKIM-* and other headers the service owns, nor provider control headers (X-SES-*, X-Amz-* and the like). Every header line of the message is at most 998 octets (RFC 5322): a long value is folded at its spaces and tabs; an X- header whose value has a word too long for one line is sent as RFC 2047 encoded-words (readers decode it back); any other header whose first word cannot fit beside its name is a 422 naming the header and the limit.",
    "Attachment file names are written as RFC 2231 parameters: ASCII names quoted as they are, others UTF-8 percent-encoded (`filename*=utf-8''...`, in numbered sections when long).",
    "Template values are HTML-escaped in an HTML body; in a `markdown` body they are inserted as literal text, so a value never becomes a link, image, autolink, emphasis or HTML. In every body, links, images and other URL attributes may use only http(s), mailto:, tel:, cid: or relative URLs; any other (javascript:, data:, ...) is removed before the email is stored.",
  ].join("\n\n"),
  security: securityScheme,
  request: {
    headers: z.object({ "idempotency-key": IdempotencyKeySchema }),
    body: jsonBody(SendRequestSchema),
  },
  responses: {
    200: jsonResponse(SendResponseSchema, "Accepted and queued"),
    ...commonErrors,
    403: errorResponse("Public key, disabled project, or the from domain is not verified (DOMAIN_NOT_VERIFIED)"),
    409: errorResponse("The Idempotency-Key was used with a different request body within 24 hours (CONFLICT)"),
  },
});

export const sendRouter = createRouter().openapi(sendRoute, async (c) => {
  const body = c.req.valid("json");
  const idempotencyKey = c.req.valid("header")["idempotency-key"];
  const result = await acceptSend(getDb(c.env.DB), c.env, c.get("auth").projectId, body, {
    verifiedDomains: c.get("caches").get(verifiedDomainCache),
    idempotencyKey,
    requestUrl: c.req.url,
    beforeWrite: c.get("rateLimitAllowed"),
    afterCommit: c.get("afterCommit"),
  });
  return c.json(success(result), 200);
});
