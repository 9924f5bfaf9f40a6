import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppBindings } from "../env";

/** One field-level problem inside a 422 response. */
export interface FieldError {
  field: string;
  message: string;
  code: string;
}

export type ErrorCode =
  | "BAD_REQUEST"
  | "INVALID_JSON"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "INVALID_STATE"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "PROJECT_DISABLED"
  | "DOMAIN_NOT_VERIFIED"
  | "NOT_FOUND"
  | "CONFLICT"
  | "PAYLOAD_TOO_LARGE"
  | "VALIDATION_ERROR"
  | "RATE_LIMITED"
  | "QUOTA_EXCEEDED"
  | "INTERNAL_ERROR";

/**
 * The one error type of the service. Anything thrown as an ApiError reaches
 * the client as the contract's envelope with this status and code.
 */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly details: { errors?: FieldError[]; suggestion?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  static notFound(resource: string) {
    return new ApiError(404, "NOT_FOUND", `${resource} not found`);
  }

  static invalidState(message: string, suggestion?: string) {
    return new ApiError(400, "INVALID_STATE", message, { suggestion });
  }

  static validation(errors: FieldError[]) {
    return new ApiError(422, "VALIDATION_ERROR", "Validation failed", {
      errors,
      suggestion: "Fix the fields listed in errors and retry.",
    });
  }
}

export const ErrorEnvelopeSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string().openapi({ example: "VALIDATION_ERROR" }),
      message: z.string(),
      statusCode: z.number().int(),
      requestId: z.string(),
      errors: z
        .array(z.object({ field: z.string(), message: z.string(), code: z.string() }))
        .optional(),
      suggestion: z.string().optional(),
    }),
    timestamp: z.string().datetime(),
  })
  .openapi("Error");

export function errorBody(err: ApiError, requestId: string) {
  return {
    success: false as const,
    error: {
      code: err.code,
      message: err.message,
      statusCode: err.status,
      requestId,
      ...(err.details.errors ? { errors: err.details.errors } : {}),
      ...(err.details.suggestion ? { suggestion: err.details.suggestion } : {}),
    },
    timestamp: new Date().toISOString(),
  };
}

/** Turns a zod error into the contract's `errors[]`: one item per bad field. */
export function fieldErrorsFromZod(error: z.ZodError, prefix?: string): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const path = issue.path.map(String).join(".");
    const field = [prefix, path].filter(Boolean).join(".") || prefix || "body";
    if (seen.has(field)) continue;
    seen.add(field);
    out.push({ field, message: issue.message, code: issue.code });
  }
  return out;
}

function fromHttpException(err: HTTPException): ApiError {
  const message = err.message || "Bad request";
  if (err.status === 413) return new ApiError(413, "PAYLOAD_TOO_LARGE", "Request body is too large");
  if (/malformed json/i.test(message)) {
    return new ApiError(400, "INVALID_JSON", "Request body is not valid JSON", {
      suggestion: "Send a JSON object with Content-Type: application/json.",
    });
  }
  if (err.status === 415 || /content-type/i.test(message)) {
    return new ApiError(400, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json", {
      suggestion: "Send the body as JSON with Content-Type: application/json.",
    });
  }
  return new ApiError(err.status as ContentfulStatusCode, err.status === 400 ? "BAD_REQUEST" : "INTERNAL_ERROR", message);
}

export function respondWithError(c: Context<AppBindings>, err: ApiError) {
  const requestId = c.get("requestId") ?? crypto.randomUUID();
  for (const [name, value] of Object.entries(err.details.headers ?? {})) c.header(name, value);
  c.header("X-Request-Id", requestId);
  return c.json(errorBody(err, requestId), err.status);
}

/** Largest stored contact data (JSON bytes), enforced by a D1 trigger on every write (migration 0002). */
export const MAX_CONTACT_DATA_BYTES = 65536;

/**
 * Limits the database enforces itself (triggers that RAISE a known message),
 * turned into the client error they stand for. Checked inside the write, so no
 * concurrent request can slip past them.
 */
const DATABASE_GUARDS: [RegExp, () => ApiError][] = [
  [
    /CONTACT_DATA_TOO_LARGE/,
    () =>
      ApiError.validation([
        {
          field: "data",
          message: `A contact's data may be at most ${MAX_CONTACT_DATA_BYTES} bytes as JSON (after merging with what is stored)`,
          code: "too_big",
        },
      ]),
  ],
];

/** The ApiError for an error raised by one of the database's guards, or null. */
export function fromDatabaseGuard(err: unknown): ApiError | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const message = e instanceof Error ? e.message : String(e);
    for (const [pattern, make] of DATABASE_GUARDS) if (pattern.test(message)) return make();
  }
  return null;
}

/** The app's onError handler: every thrown thing becomes the envelope; only real bugs are 500. */
export function handleError(err: Error, c: Context<AppBindings>) {
  if (err instanceof ApiError) return respondWithError(c, err);
  if (err instanceof HTTPException) return respondWithError(c, fromHttpException(err));
  const guarded = fromDatabaseGuard(err);
  if (guarded) return respondWithError(c, guarded);
  console.error("unhandled error", c.get("requestId"), err);
  return respondWithError(c, new ApiError(500, "INTERNAL_ERROR", "An unexpected error occurred"));
}

export function handleNotFound(c: Context<AppBindings>) {
  return respondWithError(c, new ApiError(404, "NOT_FOUND", `No route for ${c.req.method} ${c.req.path}`));
}
