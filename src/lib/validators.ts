import * as z from "./zod";

/**
 * Field validators shared by the resources' schemas (src/schemas): addresses,
 * free-form data, header-safe text, path ids. Each accepts exactly what the
 * service can store and put in mail, and names the problem otherwise.
 */

export const IdParamSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "0190f0a4-..." }),
});

/** An optional record id in the query string (`?contactId=`, `?campaignId=`): a filter of a list. */
export const idQuery = (name: string, description?: string) =>
  z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ param: { name, in: "query" }, ...(description ? { description } : {}) });

const MAX_DATA_BYTES = 32 * 1024;
const MAX_DATA_DEPTH = 8;

function depthOf(value: unknown, depth = 0): number {
  if (depth > MAX_DATA_DEPTH || value === null || typeof value !== "object") return depth;
  let max = depth;
  for (const child of Object.values(value)) max = Math.max(max, depthOf(child, depth + 1));
  return max;
}

/** Bytes of `value` as stored: its JSON, UTF-8. */
export const jsonByteLength = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value)).length;

/**
 * Free-form key/value data (contact data, event data): keys 1-128 characters,
 * at most 32 KB as JSON and 8 levels deep. A null value deletes that key when
 * merged into a contact.
 */
export const DataObjectSchema = z
  .record(z.string().min(1).max(128), z.unknown())
  .superRefine((value, ctx) => {
    if (depthOf(value) > MAX_DATA_DEPTH) {
      ctx.addIssue({ code: "custom", message: `data may be nested at most ${MAX_DATA_DEPTH} levels deep` });
    } else if (jsonByteLength(value) > MAX_DATA_BYTES) {
      ctx.addIssue({ code: "custom", message: "data may be at most 32 KB as JSON" });
    }
  })
  .openapi({
    type: "object",
    description: "Free-form key/value data: keys 1-128 characters, at most 32 KB as JSON, 8 levels deep",
    example: { firstName: "Ada", plan: "pro" },
  });

/**
 * Text that ends up in a mail header (subjects, display names): trimmed, at
 * most `max` characters, no CR/LF or other control characters (tab allowed),
 * so no request can add or split a header.
 */
export const headerText = (max: number) =>
  z
    .string()
    .regex(/^[^\u0000-\u0008\u000a-\u001f\u007f]*$/, "Must not contain line breaks or control characters")
    .trim()
    .max(max);

/** An email address as accepted everywhere: trimmed, lower-cased, at most 254 characters. */
export const EmailAddressSchema = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ message: "Invalid email address" }))
  .transform((email) => email.toLowerCase())
  .openapi({ type: "string", format: "email", example: "ada@example.com" });
