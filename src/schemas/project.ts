import * as z from "../lib/zod";
import { EmailAddressSchema, headerText } from "../lib/validators";
import { TRACKING_MODES } from "../db/schema";

/** A project's unsubscribe footer: its longest, and the variable it must use. */
export const MAX_UNSUBSCRIBE_FOOTER_CHARS = 2000;
export const USES_UNSUBSCRIBE_URL = /\{\{\s*unsubscribeUrl\s*\}\}/;

/** The variable a double opt-in template must use: the signed confirm link. */
export const CONFIRM_URL_VARIABLE = "confirmUrl";

export const ProjectSettingsSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    trackingEnabled: z.boolean().openapi({ description: "Open and click tracking of the project's mail (on by default): false when trackingMode is DISABLED" }),
    trackingMode: z.enum(TRACKING_MODES).openapi({
      description:
        "ENABLED (the default): opens and clicks tracked; DISABLED: no pixel, every link as written; MARKETING_ONLY: only marketing mail (campaigns, MARKETING templates, broadcast sends) is tracked. A sending domain's openTracking/clickTracking and a send's `track` narrow or override it.",
    }),
    doubleOptIn: z.boolean().openapi({
      description:
        "Double opt-in (off by default). When on, a contact a public key (pk_) creates through POST /v1/track starts unsubscribed and is sent the confirmation template; it is subscribed, and its CONTACT_CREATED and CONTACT_SUBSCRIBED workflows start, only when the recipient confirms through the signed link. Contacts created with a secret key are not affected.",
    }),
    doubleOptInTemplateId: z
      .string()
      .nullable()
      .openapi({
        description: `The confirmation email's template. Its subject or body must use \`{{${CONFIRM_URL_VARIABLE}}}\` (the signed confirm link) and it must have a \`from\` on a VERIFIED domain of the project.`,
      }),
    defaultFrom: z.object({ email: z.string(), name: z.string().nullable() }).nullable().openapi({
      description:
        "The default sender: used by `/v1/send` and campaigns when neither the request nor its template gives a `from` (Plunk clients that omit `from` then work). On a VERIFIED domain of the project. null: none, and such mail is refused with 422 naming `from`.",
    }),
    inbound: z
      .object({
        trackReplies: z.boolean().openapi({
          description:
            "Reply tracking by default (off by default): the Reply-To of the project's mail (/v1/send, campaigns and their test sends, workflow SEND_EMAIL steps) is each email's signed reply address `r+<token>@<domain>`, so replies are received and matched to the email and its contact. It never replaces a Reply-To the mail already has (a send's `reply`, a template's); a send's own `trackReplies` decides for that send, and only `trackReplies: true` on the send replaces its Reply-To. Turning it on needs the deployment's INBOUND_DOMAIN (409 naming INBOUND_DOMAIN without it).",
        }),
        domain: z.string().nullable().openapi({ description: "The deployment's inbound domain (INBOUND_DOMAIN); null: this deployment receives no mail" }),
        namedAddress: z.string().nullable().openapi({
          example: "support+0190f5a1c2d37e4f8a9b0c1d2e3f4a5b@in.example.com",
          description:
            "An address of this project on the inbound domain, `<name>+<32 hex project id>@<domain>`: mail to it is received for the project, unthreaded (matched to no email). `support` is only an example: any name of 1-32 characters `[a-z0-9][a-z0-9._-]{0,31}` works before the `+`, except `r` and `u` (the reply and unsubscribe addresses). null without an inbound domain.",
        }),
      })
      .openapi({ description: "Receiving mail (docs/deploy.md#receiving-mail): reply tracking and the project's own addresses" }),
    unsubscribeFooter: z.string().nullable().openapi({
      description:
        'The footer marketing mail (campaigns, MARKETING templates, broadcast and topic sends) gets when its body has no `{{unsubscribeUrl}}`: HTML that uses `{{unsubscribeUrl}}` (it may use `{{preferencesUrl}}` and the contact\'s variables too), put before `</body>` or at the end. null: the built-in footer, a small centred "Unsubscribe" link. A body that uses `{{unsubscribeUrl}}` anywhere gets no footer.',
    }),
    storedBytes: z.number().int().openapi({
      description:
        "Bytes the project keeps in the database (email HTML until sent, headers, event and contact data, templates, campaigns, workflow versions), against QUOTA_STORED_BYTES",
    }),
    r2StoredBytes: z.number().int().openapi({
      description: "Bytes the project keeps in object storage (R2: sent email bodies and stored files), counted apart, against QUOTA_R2_STORED_BYTES",
    }),
    historyDays: z.number().int().openapi({
      description:
        "The hot window (`EMAIL_HOT_DAYS`, default 90): lists of emails, events and webhook deliveries cover this many days; older records are archived (`GET /emails/{id}` and `GET /exports/*` still read them, docs/archive.md)",
    }),
    updatedAt: z.string().datetime(),
  })
  .openapi("ProjectSettings");

export const UpdateProjectSettingsSchema = z
  .object({
    trackingEnabled: z.boolean().optional().openapi({ description: "Plunk's switch, still accepted: true is trackingMode ENABLED, false DISABLED" }),
    trackingMode: z.enum(TRACKING_MODES).optional(),
    doubleOptIn: z.boolean().optional(),
    doubleOptInTemplateId: z.string().min(1).max(64).nullable().optional(),
    defaultFrom: z
      .object({ email: EmailAddressSchema, name: headerText(200).optional() })
      .strict()
      .nullable()
      .optional()
      .openapi({ description: "The default sender, on a VERIFIED domain of the project (422 naming `defaultFrom` otherwise); null removes it" }),
    unsubscribeFooter: z
      .string()
      .trim()
      .min(1)
      .max(MAX_UNSUBSCRIBE_FOOTER_CHARS)
      .refine((footer) => USES_UNSUBSCRIBE_URL.test(footer), { message: "The footer must use {{unsubscribeUrl}} (the recipient's unsubscribe link)" })
      .nullable()
      .optional()
      .openapi({
        description: `HTML of at most ${MAX_UNSUBSCRIBE_FOOTER_CHARS} characters that uses {{unsubscribeUrl}} (422 otherwise); null: the built-in footer`,
      }),
    inbound: z
      .object({
        trackReplies: z.boolean().optional().openapi({
          description:
            "Reply tracking by default for the project's mail; never replaces a Reply-To the mail has. true without the deployment's INBOUND_DOMAIN: 409 naming INBOUND_DOMAIN, and nothing changes.",
        }),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.trackingEnabled !== undefined && input.trackingMode !== undefined && input.trackingEnabled !== (input.trackingMode !== "DISABLED")) {
      ctx.addIssue({ code: "custom", path: ["trackingEnabled"], message: "trackingEnabled contradicts trackingMode: send one of them" });
    }
  })
  .openapi("UpdateProjectSettings");

/** What the settings service answers; the route adds `historyDays` (a deployment setting, not the project's). */
export type ProjectSettingsView = Omit<z.infer<typeof ProjectSettingsSchema>, "historyDays">;
export type UpdateProjectSettingsRequest = z.infer<typeof UpdateProjectSettingsSchema>;

export const SendingStatusSchema = z
  .object({
    paused: z.boolean().openapi({ description: "True while the reputation breaker has paused sending: /v1/send and campaign sends are 403 SENDING_PAUSED" }),
    pausedAt: z.string().datetime().nullable(),
    reason: z.string().nullable().openapi({ example: "Bounce rate 6.20% (31 of 500 emails sent) over the last 7 days is above the 5% limit" }),
    window: z
      .object({
        days: z.number().int(),
        sent: z.number().int(),
        bounced: z.number().int().openapi({ description: "Permanent bounces" }),
        complained: z.number().int(),
      })
      .openapi({ description: "Counts of the current window (UTC days, today included); a resume starts a fresh window" }),
    limits: z.object({
      minSent: z.number().int().openapi({ description: "Emails sent in the window before the rates are judged" }),
      maxBounceRate: z.number().openapi({ example: 0.05 }),
      maxComplaintRate: z.number().openapi({ example: 0.001 }),
    }),
  })
  .openapi("SendingStatus");

export type SendingStatusView = z.infer<typeof SendingStatusSchema>;
