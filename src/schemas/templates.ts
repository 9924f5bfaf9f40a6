import * as z from "../lib/zod";
import { listEnvelope } from "../lib/openapi";
import { EmailAddressSchema, headerText } from "../lib/validators";

export const MAX_TEMPLATE_NAME = 200;
/** RFC 5322's line length limit: the subject becomes a mail header. */
export const MAX_TEMPLATE_SUBJECT = 998;
export const MAX_TEMPLATE_FROM_NAME = 200;
export const MAX_TEMPLATE_BODY_BYTES = 512 * 1024;

/** Single-line, non-empty text that is safe to put in a mail header. */
const requiredHeaderText = (max: number) => headerText(max).min(1);

export const TemplateTypeSchema = z.enum(["TRANSACTIONAL", "MARKETING"]).openapi({
  description: "MARKETING templates are only sent to subscribed contacts",
});

export const TemplateSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    subject: z.string(),
    body: z.string().openapi({ description: "HTML" }),
    type: TemplateTypeSchema,
    from: z.string().email().nullable(),
    fromName: z.string().nullable(),
    replyTo: z.string().email().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Template");

const templateFields = {
  name: requiredHeaderText(MAX_TEMPLATE_NAME).openapi({ example: "Welcome", description: `1-${MAX_TEMPLATE_NAME} characters` }),
  subject: requiredHeaderText(MAX_TEMPLATE_SUBJECT).openapi({
    example: "Welcome, {{firstName ?? friend}}",
    description: `1-${MAX_TEMPLATE_SUBJECT} characters, no line breaks; may use {{variables}}`,
  }),
  body: z
    .string()
    .min(1)
    .refine((value) => new TextEncoder().encode(value).length <= MAX_TEMPLATE_BODY_BYTES, {
      message: `Body may be at most ${MAX_TEMPLATE_BODY_BYTES / 1024} KB`,
    })
    .openapi({ example: "<p>Hello {{firstName}}</p>", description: "HTML, at most 512 KB; may use {{variables}}" }),
  type: TemplateTypeSchema,
  from: EmailAddressSchema.nullable()
    .optional()
    .openapi({
      type: ["string", "null"],
      description: "Default sender address for sends with this template (needs a verified domain when sending); null clears it",
    }),
  fromName: requiredHeaderText(MAX_TEMPLATE_FROM_NAME)
    .nullable()
    .optional()
    .openapi({ description: "Default sender display name, no line breaks; null clears it" }),
  replyTo: EmailAddressSchema.nullable()
    .optional()
    .openapi({ type: ["string", "null"], description: "Default reply-to address; null clears it" }),
};

export const CreateTemplateSchema = z.object(templateFields).openapi("CreateTemplate");
export const UpdateTemplateSchema = z
  .object({
    name: templateFields.name.optional(),
    subject: templateFields.subject.optional(),
    body: templateFields.body.optional(),
    type: templateFields.type.optional(),
    from: templateFields.from,
    fromName: templateFields.fromName,
    replyTo: templateFields.replyTo,
  })
  .openapi("UpdateTemplate");

/** A template as the API shows it. */
export type TemplateView = z.infer<typeof TemplateSchema>;
export const TemplateListResponseSchema = listEnvelope(TemplateSchema);
export type CreateTemplateRequest = z.infer<typeof CreateTemplateSchema>;
/** Every field optional; `null` clears from, fromName or replyTo. */
export type UpdateTemplateRequest = z.infer<typeof UpdateTemplateSchema>;
