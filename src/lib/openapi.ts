import { z } from "@hono/zod-openapi";
import { ErrorEnvelopeSchema } from "./errors";

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorEnvelopeSchema } },
});

/** Error responses every authenticated route can give, for the OpenAPI document. */
export const commonErrors = {
  400: errorResponse("Malformed JSON, wrong content type, or an action not allowed in the current state (INVALID_STATE)"),
  401: errorResponse("Missing, malformed or unknown API key"),
  403: errorResponse("Public key used where a secret key is needed, or the project is disabled"),
  404: errorResponse("Unknown id, or an id that belongs to another project"),
  413: errorResponse("Request body too large"),
  422: errorResponse("Validation failed: one item in error.errors per bad field"),
  429: errorResponse("Rate limited: see Retry-After and RateLimit-* headers"),
  500: errorResponse("Unexpected error"),
} as const;

export { errorResponse };

/** A required JSON request body validated by `schema`. */
export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  description,
  content: { "application/json": { schema } },
});

/** A JSON response documented with `schema`. */
export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** `{success: true, data}` as used by /v1 endpoints and several resource endpoints. */
export const successEnvelope = <T extends z.ZodType>(data: T) =>
  z.object({ success: z.literal(true), data });

/** The spec's general list shape: `{success, data: {items, nextCursor, hasMore, total}}`. */
export const listEnvelope = <T extends z.ZodType>(item: T) =>
  successEnvelope(
    z.object({
      items: z.array(item),
      nextCursor: z.string().nullable(),
      hasMore: z.boolean(),
      total: z.number().int(),
    }),
  );

export const IdParamSchema = z.object({
  id: z.string().min(1).max(64).openapi({ param: { name: "id", in: "path" }, example: "0190f0a4-..." }),
});

const MAX_DATA_BYTES = 32 * 1024;
const MAX_DATA_DEPTH = 8;

function depthOf(value: unknown, depth = 0): number {
  if (depth > MAX_DATA_DEPTH || value === null || typeof value !== "object") return depth;
  let max = depth;
  for (const child of Object.values(value)) max = Math.max(max, depthOf(child, depth + 1));
  return max;
}

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
    } else if (new TextEncoder().encode(JSON.stringify(value)).length > MAX_DATA_BYTES) {
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
export const EmailSchema = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ message: "Invalid email address" }))
  .transform((email) => email.toLowerCase())
  .openapi({ type: "string", format: "email", example: "ada@example.com" });

export const securityScheme = [{ bearerAuth: [] }];
