import * as z from "../lib/zod";
import { successEnvelope } from "../lib/openapi";
import { DataObjectSchema, EmailAddressSchema, headerText } from "../lib/validators";
import { base64DecodedSize, blockedExtension, CONTENT_TYPE_PATTERN, FILENAME_PATTERN, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS } from "./attachments";
import { headerNameProblem, headerValueProblem } from "./headers";
import { SUPPRESSION_REASONS, SUPPRESSION_STREAMS } from "../db/schema";
import { TopicKeySchema } from "./topics";

/** What /v1/send inReplyTo accepts: an inbound message's id (a UUID), never a header's text. */
export const INBOUND_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Most ids in the References header of a send answering an inbound message (its own Message-ID included). */
export const MAX_REFERENCES = 100;

/** Recipients of one send (distinct addresses). */
export const MAX_RECIPIENTS = 50;

/** Most custom headers on one /v1/send, and their total size (names and values, UTF-8 bytes). */
export const MAX_CUSTOM_HEADERS = 50;
export const MAX_CUSTOM_HEADER_BYTES = 8 * 1024;
/** Largest /v1/send JSON once the attachments' content strings are left out, in characters. */
export const MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS = 1024 * 1024;

/**
 * Characters of a /v1/send JSON text outside its `attachments[].content`
 * strings, in one linear pass without parsing, so a memory bomb of small keys
 * is refused before JSON.parse builds it. Malformed JSON is measured as it
 * comes (the parser refuses it afterwards); a key written with escapes is not
 * recognised, so its string counts.
 */
export function jsonCharsOutsideAttachmentContent(text: string): number {
  const OBJECT = 123;
  const types: number[] = []; // container type ({ or [) of levels 1-4
  const keys: (string | undefined)[] = []; // last key read at levels 1-4
  let depth = 0;
  let expectKey = false;
  let content = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let end = i + 1;
      for (;;) {
        end = text.indexOf('"', end);
        if (end === -1) {
          end = text.length;
          break;
        }
        let backslash = end - 1;
        while (text.charCodeAt(backslash) === 92) backslash--;
        if ((end - 1 - backslash) % 2 === 0) break;
        end++;
      }
      if (depth >= 1 && depth <= 3) {
        if (expectKey && types[depth - 1] === OBJECT) keys[depth - 1] = end - i - 1 <= 16 ? text.slice(i + 1, end) : undefined;
        else if (depth === 3 && types[2] === OBJECT && keys[2] === "content" && types[1] === 91 && types[0] === OBJECT && keys[0] === "attachments") {
          content += end + 1 - i;
        }
      }
      i = end;
    } else if (c === OBJECT || c === 91 /* [ */) {
      depth++;
      if (depth <= 4) {
        types[depth - 1] = c;
        keys[depth - 1] = undefined;
      }
      expectKey = c === OBJECT;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
      expectKey = false;
    } else if (c === 58 /* : */) {
      expectKey = false;
    } else if (c === 44 /* , */) {
      expectKey = depth >= 1 && depth <= 4 && types[depth - 1] === OBJECT;
    }
  }
  return text.length - content;
}

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
    headers: z
      .record(z.string(), z.string())
      .optional()
      .openapi({ description: `Custom headers: at most ${MAX_CUSTOM_HEADERS}, ${MAX_CUSTOM_HEADER_BYTES} bytes of names and values in all` }),
    stream: z
      .enum(["transactional", "broadcast", "TRANSACTIONAL", "BROADCAST"])
      .transform((s) => s.toUpperCase() as "TRANSACTIONAL" | "BROADCAST")
      .optional()
      .openapi({
        description:
          "TRANSACTIONAL (the default: receipts, password resets; only suppressions of every stream stop it) or BROADCAST (marketing mail: List-Unsubscribe, only to subscribed contacts, through the broadcast provider). A MARKETING template, or a topic, makes the send BROADCAST; `transactional` with either is a 422. Lower case accepted.",
      }),
    topic: TopicKeySchema.optional().openapi({
      description:
        "Aim the mail at a topic (its key; 422 naming `topic` when the project has none by that key): BROADCAST mail that reaches a recipient only if subscribed and OPT_IN for the topic (its choice, or the topic's default), else the send is refused naming the gate TOPIC. It carries `List-Id: <key>.<project id>.<host>`, and its unsubscribe links opt the recipient out of this topic only.",
    }),
    subscribed: z.boolean().optional().openapi({
      description:
        "true subscribes recipients this send creates as contacts (it never re-subscribes an existing contact who unsubscribed: only they, or a contact update, can); false unsubscribes them. Contacts created by a send are unsubscribed unless true.",
    }),
    data: DataObjectSchema.optional().openapi({
      description: "Template variables, merged into the contact's data; a value `{value, persistent: false}` is used for this email only",
    }),
    track: z
      .object({
        opens: z.boolean().optional().openapi({ description: "false: no open pixel; true: a pixel even where the project or domain has open tracking off" }),
        clicks: z
          .boolean()
          .optional()
          .openapi({ description: "false: every link exactly as written; true: links tracked even where the project or domain has click tracking off" }),
      })
      .strict()
      .optional()
      .openapi({
        description:
          "This send's tracking, over the project's trackingMode and the sending domain's switches (Plunk issue #432); a switch left out follows them",
      }),
    trackReplies: z.boolean().optional().openapi({
      description:
        "This send's reply tracking, over the project's `inbound.trackReplies`. true: each email's Reply-To is its signed reply address `r+<token>@<INBOUND_DOMAIN>`, so replies are received and matched to the email (GET /emails/{id}/replies); it replaces the send's own `reply` or its template's Reply-To, because this send asked. false: the Reply-To stays as given. Left out: the project's default, which never replaces a Reply-To the mail has (only mail without one gets the reply address). true without INBOUND_DOMAIN on the deployment: 409 naming `trackReplies`.",
    }),
    inReplyTo: z
      .string()
      .regex(INBOUND_ID_PATTERN, "inReplyTo is the id of an inbound message (GET /inbound): 1-64 letters, digits, '-' or '_'")
      .optional()
      .openapi({
        description: `Answer an inbound message of this project (its id from GET /inbound): the mail gets \`In-Reply-To: <its Message-ID>\` and \`References:\` its references then its Message-ID (at most ${MAX_REFERENCES} ids: the first kept, then the newest), so the recipient's mail client threads it. An id of no inbound message of this project (or one without a Message-ID) is a 422 naming \`inReplyTo\`, and nothing is sent; custom In-Reply-To or References headers beside it are a 422 too.`,
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
    const headers = Object.entries(req.headers ?? {});
    const encoder = new TextEncoder();
    const headerBytes = headers.length > MAX_CUSTOM_HEADERS ? 0 : headers.reduce((sum, [n, v]) => sum + encoder.encode(n).length + encoder.encode(v).length, 0);
    if (headers.length > MAX_CUSTOM_HEADERS || headerBytes > MAX_CUSTOM_HEADER_BYTES) {
      const message =
        headers.length > MAX_CUSTOM_HEADERS
          ? `At most ${MAX_CUSTOM_HEADERS} custom headers (got ${headers.length})`
          : `Custom headers may total at most ${MAX_CUSTOM_HEADER_BYTES} bytes of names and values (got ${headerBytes})`;
      ctx.addIssue({ code: "custom", path: ["headers"], message });
      headers.length = 0; // one error for the field, not one per header
    }
    for (const [name, value] of headers) {
      const problem = headerNameProblem(name) ?? headerValueProblem(value, name);
      if (problem) ctx.addIssue({ code: "custom", path: ["headers", name], message: problem });
    }
    if (req.inReplyTo !== undefined) {
      const threading = Object.keys(req.headers ?? {}).filter((name) => /^(in-reply-to|references)$/i.test(name));
      if (threading.length > 0) {
        ctx.addIssue({
          code: "custom",
          path: ["inReplyTo"],
          message: `inReplyTo sets ${threading.join(" and ")}: leave ${threading.length > 1 ? "them" : "it"} out of headers`,
        });
      }
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
    .array(
      z.object({
        email: z.string(),
        reason: z.enum(SUPPRESSION_REASONS).openapi({ description: "The suppression list entry's reason" }),
        stream: z.enum(SUPPRESSION_STREAMS).openapi({ description: "Which mail the entry stops: ALL, or BROADCAST only (an unsubscribe)" }),
        gate: z
          .literal("SUPPRESSED")
          .openapi({ description: "The consent gate that refused the recipient (the first of four: SUPPRESSED, the stream, UNSUBSCRIBED, TOPIC)" }),
      }),
    )
    .openapi({
      description:
        "Recipients not sent to because they are on the project's suppression list for this mail's stream (a bounce, a complaint or a manual entry stops every stream; an unsubscribe only BROADCAST mail); no email is written for them and they count toward no quota",
    }),
  timestamp: z.string().datetime(),
});

/** What POST /v1/send answers (inside the success envelope). */
export type SendResult = z.infer<typeof SendResultSchema>;

export const SendResponseSchema = successEnvelope(SendResultSchema);

export const IdempotencyKeySchema = z
  .string()
  .regex(/^[!-~]{1,255}$/, "Idempotency-Key must be 1-255 printable ASCII characters")
  .optional();
