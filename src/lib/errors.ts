import * as z from "./zod";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppBindings } from "./context";

/** One field-level problem inside a 422 response. */
export interface FieldError {
  field: string;
  message: string;
  code: string;
}

/**
 * Every error code of the service and the HTTP status it answers: the status
 * follows from the code. One code has a second status: QUOTA_EXCEEDED is 403
 * for the stock quotas (contacts, domains, stored bytes) and 429 for the daily
 * ones (emails, events), which waiting fixes; that error passes the status.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  INVALID_JSON: 400,
  UNSUPPORTED_MEDIA_TYPE: 400,
  INVALID_STATE: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  PROJECT_DISABLED: 403,
  DOMAIN_NOT_VERIFIED: 403,
  QUOTA_EXCEEDED: 403,
  /** The reputation breaker paused the project's sending (bounce or complaint rate); reading and other writes still work. */
  SENDING_PAUSED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  VALIDATION_ERROR: 422,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  /** A dependency (SES, SNS) could not be reached; retrying later helps. */
  SERVICE_UNAVAILABLE: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

export interface ErrorDetails {
  errors?: FieldError[];
  suggestion?: string;
  headers?: Record<string, string>;
  /** Only where the code alone cannot say it: the daily quotas (429) and statuses Hono raised itself. */
  status?: ContentfulStatusCode;
}

/**
 * The one error type of the service. Anything thrown as an ApiError reaches
 * the client as the contract's envelope with the code's status (ERROR_STATUS).
 */
export class ApiError extends Error {
  readonly status: ContentfulStatusCode;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.status = details.status ?? ERROR_STATUS[code];
  }

  static notFound(resource: string) {
    return new ApiError("NOT_FOUND", `${resource} not found`);
  }

  static invalidState(message: string, suggestion?: string) {
    return new ApiError("INVALID_STATE", message, { suggestion });
  }

  static validation(errors: FieldError[]) {
    return new ApiError("VALIDATION_ERROR", "Validation failed", {
      errors,
      suggestion: "Fix the fields listed in errors and retry.",
    });
  }
}

export const ErrorEnvelopeSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.enum(ERROR_CODES).openapi({
        example: "VALIDATION_ERROR",
        description:
          "The HTTP status follows from the code (403 or 429 for QUOTA_EXCEEDED: stock or daily quota). SENDING_PAUSED (403): the project's bounce or complaint rate passed the reputation limit, so /v1/send and campaign sends are refused until the project is resumed (GET /project/sending says why)",
      }),
      message: z.string(),
      statusCode: z.number().int(),
      requestId: z.string(),
      errors: z.array(z.object({ field: z.string(), message: z.string(), code: z.string() })).optional(),
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
  if (err.status === 413) return new ApiError("PAYLOAD_TOO_LARGE", "Request body is too large");
  if (/malformed json/i.test(message)) {
    return new ApiError("INVALID_JSON", "Request body is not valid JSON", {
      suggestion: "Send a JSON object with Content-Type: application/json.",
    });
  }
  if (err.status === 415 || /content-type/i.test(message)) {
    return new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json", {
      suggestion: "Send the body as JSON with Content-Type: application/json.",
    });
  }
  return new ApiError(err.status === 400 ? "BAD_REQUEST" : "INTERNAL_ERROR", message, { status: err.status as ContentfulStatusCode });
}

export function respondWithError(c: Context<AppBindings>, err: ApiError) {
  const requestId = c.get("requestId") ?? crypto.randomUUID();
  for (const [name, value] of Object.entries(err.details.headers ?? {})) c.header(name, value);
  c.header("X-Request-Id", requestId);
  return c.json(errorBody(err, requestId), err.status);
}

/** The app's onError handler: every thrown thing becomes the envelope; only real bugs are 500. */
export function handleError(err: Error, c: Context<AppBindings>) {
  if (err instanceof ApiError) return respondWithError(c, err);
  if (err instanceof HTTPException) return respondWithError(c, fromHttpException(err));
  console.error("unhandled error", c.get("requestId"), err);
  return respondWithError(c, new ApiError("INTERNAL_ERROR", "An unexpected error occurred"));
}

export function handleNotFound(c: Context<AppBindings>) {
  return respondWithError(c, new ApiError("NOT_FOUND", `No route for ${c.req.method} ${c.req.path}`));
}
