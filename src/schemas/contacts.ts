import * as z from "../lib/zod";
import { PaginationQuerySchema } from "../lib/pagination";
import { DataObjectSchema, EmailAddressSchema } from "../lib/validators";
import { TopicChoicesSchema } from "./topics";

export const ContactSchema = z
  .object({
    id: z.string(),
    email: z.string().email(),
    subscribed: z.boolean(),
    data: z.record(z.string(), z.unknown()),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Contact");
/** A contact as the API shows it. */
export type ContactView = z.infer<typeof ContactSchema>;

export const UpsertedContactSchema = ContactSchema.extend({
  _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }),
}).openapi("UpsertedContact");

const booleanQuery = z
  .enum(["true", "false"])
  .transform((v) => v === "true")
  .optional();

export const ContactListQuerySchema = PaginationQuerySchema.extend({
  subscribed: booleanQuery.openapi({ param: { name: "subscribed", in: "query" }, type: "boolean" }),
  search: z
    .string()
    .max(254)
    .optional()
    .openapi({ param: { name: "search", in: "query" }, description: "Case-insensitive substring of the email" }),
});
export type ContactListQuery = z.infer<typeof ContactListQuerySchema>;

/** GET /contacts keeps Plunk's own list shape ({contacts, cursor, hasMore, total}), not the general envelope. */
export const ContactListResponseSchema = z.object({
  contacts: z.array(ContactSchema),
  cursor: z.string().nullable(),
  hasMore: z.boolean(),
  total: z.number().int(),
});

export const UpsertContactRequestSchema = z.object({
  email: EmailAddressSchema,
  subscribed: z.boolean().optional().openapi({ description: "Default true for a new contact" }),
  data: DataObjectSchema.optional(),
  topics: TopicChoicesSchema.optional(),
});

export const UpdateContactRequestSchema = z.object({
  subscribed: z.boolean().optional(),
  data: DataObjectSchema.optional(),
});
export type UpdateContactRequest = z.infer<typeof UpdateContactRequestSchema>;
