import * as z from "./zod";
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
export const successEnvelope = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

/** The body successEnvelope describes: `c.json(success(data), 200)`. */
export const success = <T>(data: T) => ({ success: true as const, data });

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

export const securityScheme = [{ bearerAuth: [] }];
