import { z } from "@hono/zod-openapi";
import { successEnvelope } from "../lib/openapi";
import { DataObjectSchema, EmailAddressSchema, headerText } from "../lib/validators";
import { base64DecodedSize, blockedExtension, CONTENT_TYPE_PATTERN, FILENAME_PATTERN, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS } from "./attachments";
import { headerNameProblem, headerValueProblem } from "./headers";

/** Recipients of one send (distinct addresses). */
export const MAX_RECIPIENTS = 50;

export const DisplayNameSchema = headerText(200);

export const MailboxSchema = z.union([EmailAddressSchema, z.object({ name: DisplayNameSchema.optional(), email: EmailAddressSchema })]);

export const AttachmentSchema = z
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
    body: z
      .string()
      .min(1)
      .max(512 * 1024)
      .optional(),
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
    attachments: z
      .array(AttachmentSchema)
      .max(MAX_ATTACHMENTS)
      .optional()
      .openapi({
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

export const SendResultSchema = z.object({
  emails: z.array(z.object({ contact: z.object({ id: z.string(), email: z.string() }), email: z.string() })),
  suppressed: z
    .array(z.object({ email: z.string(), reason: z.enum(["BOUNCE", "COMPLAINT"]) }))
    .openapi({ description: "Recipients not sent to because they bounced or complained before" }),
  timestamp: z.string().datetime(),
});

/** What POST /v1/send answers (inside the success envelope). */
export type SendResult = z.infer<typeof SendResultSchema>;

export const SendResponseSchema = successEnvelope(SendResultSchema);

export const IdempotencyKeySchema = z
  .string()
  .regex(/^[!-~]{1,255}$/, "Idempotency-Key must be 1-255 printable ASCII characters")
  .optional();
