import { createRoute, z } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, errorResponse, jsonBody, jsonResponse, securityScheme, successEnvelope } from "../lib/openapi";
import { DataObjectSchema, EmailAddressSchema, headerText } from "../lib/validators";
import { createRouter } from "../lib/router";
import {
  base64DecodedSize,
  blockedExtension,
  CONTENT_TYPE_PATTERN,
  FILENAME_PATTERN,
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS,
} from "../services/send/attachments";
import { acceptSend, MAX_RECIPIENTS } from "../services/send/accept";
import { headerNameProblem, headerValueProblem } from "../services/send/headers";

const DisplayNameSchema = headerText(200);

const MailboxSchema = z.union([EmailAddressSchema, z.object({ name: DisplayNameSchema.optional(), email: EmailAddressSchema })]);

const AttachmentSchema = z
  .object({
    filename: z.string().regex(FILENAME_PATTERN, "Filenames are 1-255 characters without control characters, quotes or slashes"),
    content: z.string().min(1).openapi({ description: "File content, base64" }),
    contentType: z.string().regex(CONTENT_TYPE_PATTERN, "contentType must be a MIME type such as application/pdf"),
  })
  .superRefine((attachment, ctx) => {
    const ext = blockedExtension(attachment.filename);
    if (ext) ctx.addIssue({ code: "custom", path: ["filename"], message: `.${ext} files cannot be sent` });
    if (base64DecodedSize(attachment.content) === null) {
      ctx.addIssue({ code: "custom", path: ["content"], message: "content must be base64" });
    }
  });


export const SendRequestSchema = z
  .object({
    to: z
      .union([MailboxSchema, z.array(MailboxSchema).min(1).max(MAX_RECIPIENTS)])
      .openapi({ description: `A recipient or up to ${MAX_RECIPIENTS}: "a@b.com", {name, email}, or an array of either` }),
    subject: headerText(998).min(1).optional(),
    body: z.string().min(1).max(512 * 1024).optional(),
    type: z.enum(["html", "markdown"]).optional().openapi({ description: "Body format (Plunk SDK); default html" }),
    template: z.string().min(1).max(64).optional().openapi({ description: "Template id" }),
    from: MailboxSchema.optional(),
    name: DisplayNameSchema.optional().openapi({ description: "Sender display name (instead of from.name)" }),
    reply: EmailAddressSchema.optional().openapi({ description: "Reply-To address" }),
    headers: z.record(z.string(), z.string()).optional(),
    subscribed: z.boolean().optional().openapi({
      description: "Subscribes the recipients to marketing mail. Contacts created by a send are unsubscribed unless true.",
    }),
    data: DataObjectSchema.optional().openapi({
      description: "Template variables, merged into the contact's data; a value `{value, persistent: false}` is used for this email only",
    }),
    attachments: z.array(AttachmentSchema).max(MAX_ATTACHMENTS).optional().openapi({
      description: `Up to ${MAX_ATTACHMENTS} files totalling at most ${MAX_ATTACHMENT_BYTES} bytes decoded (about 7 MB): SES v2 takes 10 MB per raw message after base64 encoding, and the body needs the rest`,
    }),
  })
  .superRefine((req, ctx) => {
    for (const [name, value] of Object.entries(req.headers ?? {})) {
      const problem = headerNameProblem(name) ?? headerValueProblem(value);
      if (problem) ctx.addIssue({ code: "custom", path: ["headers", name], message: problem });
    }
    const total = (req.attachments ?? []).reduce((sum, a) => sum + (base64DecodedSize(a.content) ?? 0), 0);
    if (total > MAX_ATTACHMENT_BYTES) {
      ctx.addIssue({
        code: "custom",
        path: ["attachments"],
        message: `Attachments may total at most ${MAX_ATTACHMENT_BYTES} bytes decoded: one email carries at most 10 MB through the provider once encoded`,
      });
    }
    if (!req.template) {
      if (!req.subject) ctx.addIssue({ code: "custom", path: ["subject"], message: "subject is required without a template" });
      if (!req.body) ctx.addIssue({ code: "custom", path: ["body"], message: "body is required without a template" });
    }
  });

export type SendRequest = z.infer<typeof SendRequestSchema>;

const SendResponseSchema = successEnvelope(
  z.object({
    emails: z.array(z.object({ contact: z.object({ id: z.string(), email: z.string() }), email: z.string() })),
    suppressed: z
      .array(z.object({ email: z.string(), reason: z.enum(["BOUNCE", "COMPLAINT"]) }))
      .openapi({ description: "Recipients not sent to because they bounced or complained before" }),
    timestamp: z.string().datetime(),
  }),
);

const IdempotencyKeySchema = z
  .string()
  .regex(/^[!-~]{1,255}$/, "Idempotency-Key must be 1-255 printable ASCII characters")
  .optional();

const sendRoute = createRoute({
  method: "post",
  path: "/v1/send",
  tags: ["Sending"],
  summary: "Send transactional email",
  description: [
    "Accepts the email, stores one email record per recipient and queues it; nothing is sent inside the request.",
    "Each recipient's contact is created or updated (new contacts are unsubscribed unless `subscribed: true`).",
    "With `template`, the template's subject, body, from and reply-to are used and request fields override them.",
    "The `from` domain must be VERIFIED for the project (403 DOMAIN_NOT_VERIFIED).",
    "A MARKETING template is refused (400 INVALID_STATE, nothing queued, no contact changed) if any recipient is an unsubscribed contact, even with `subscribed: true`: that flag opts in new contacts but never re-subscribes someone who unsubscribed.",
    "Recipients that bounced permanently or complained are not sent to; they are listed in `suppressed`.",
    "`Idempotency-Key` (1-255 printable ASCII): a retry with the same key and body within 24 h returns the original response and sends nothing; the same key with a different body is 422 (the key names one request).",
    "CR or LF in any address, name, subject or header value is a 422; custom headers cannot set From, To, Subject, Message-ID, DKIM-* and other headers the service owns, nor provider control headers (X-SES-*, X-Amz-* and the like).",
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
  },
});

export const sendRouter = createRouter().openapi(sendRoute, async (c) => {
  const body = c.req.valid("json");
  const idempotencyKey = c.req.valid("header")["idempotency-key"];
  const result = await acceptSend(getDb(c.env.DB), c.env, c.get("auth").projectId, body, {
    idempotencyKey,
    requestUrl: c.req.url,
    beforeWrite: c.get("rateLimitAllowed"),
    onWorkflowTriggers: (pending) => c.set("workflowTriggersPending", pending),
  });
  return c.json({ success: true as const, data: result }, 200);
});
