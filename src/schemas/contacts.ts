
import { z } from "@hono/zod-openapi";

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

export const UpsertedContactSchema = ContactSchema.extend({
  _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }),
}).openapi("UpsertedContact");

export const booleanQuery = z
  .enum(["true", "false"])
  .transform((v) => v === "true")
  .optional();
