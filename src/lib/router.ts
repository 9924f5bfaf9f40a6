import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppBindings } from "../env";
import { ApiError, fieldErrorsFromZod } from "./errors";

/**
 * A router whose zod validation failures become the contract's 422
 * VALIDATION_ERROR, one `errors[]` item per bad field.
 */
export function createRouter() {
  return new OpenAPIHono<AppBindings>({
    defaultHook: (result) => {
      if (!result.success) {
        const prefix = result.target === "json" ? undefined : result.target;
        throw ApiError.validation(fieldErrorsFromZod(result.error, prefix === "query" || prefix === "param" ? undefined : prefix));
      }
    },
  });
}
