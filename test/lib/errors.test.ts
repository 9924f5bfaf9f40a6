import { describe, expect, it } from "vitest";
import { ApiError, ERROR_CODES, ERROR_STATUS } from "../../src/lib/errors";
import { call } from "../support/http";

describe("error codes", () => {
  it("an ApiError answers the status of its code", () => {
    for (const code of ERROR_CODES) expect(new ApiError(code, "x").status).toBe(ERROR_STATUS[code]);
  });

  it("the daily quotas pass 429 with QUOTA_EXCEEDED, whose own status is 403", () => {
    expect(new ApiError("QUOTA_EXCEEDED", "x").status).toBe(403);
    expect(new ApiError("QUOTA_EXCEEDED", "x", { status: 429 }).status).toBe(429);
  });

  it("the OpenAPI error schema lists every code as an enum", async () => {
    const doc = await call<{ components: { schemas: { Error: { properties: { error: { properties: { code: { enum: string[] } } } } } } } }>(
      "GET",
      "/openapi.json",
    );
    expect(doc.body.components.schemas.Error.properties.error.properties.code.enum).toEqual(ERROR_CODES);
  });
});
