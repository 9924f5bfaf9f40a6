import { createRoute } from "@hono/zod-openapi";
import { createRouter } from "../lib/router";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { VerifyAddressRequestSchema, VerifyAddressResponseSchema } from "../schemas/verify-address";
import { dnsAnswerCache, dnsConfig } from "../outside/dns";
import { verifyEmailAddress } from "../services/email-verification";

const verifyRoute = createRoute({
  method: "post",
  path: "/v1/verify",
  operationId: "verifyEmailAddress",
  tags: ["Verification"],
  summary: "Verify an email address",
  description: [
    "Checks syntax (RFC 5321/5322 dot-atom as mail providers accept it: no whitespace, no quoted local parts, no double dots, local part at most 64 characters, domain at most 253, address at most 254; IDN domains are converted to punycode), disposable and relay (alias) domains, plus-addressing, likely typos (with `suggestedEmail`), and DNS: whether the domain exists and can receive mail (MX; without MX, an A/AAAA record as RFC 5321 allows; a null MX `0 .` means no mail).",
    "",
    "Any string in `email` gets 200: an address with invalid syntax answers `valid: false` with the reason, like a malformed address in a verification list would; only a missing, empty or non-string `email` (or one over 512 characters) is a 422.",
    "DNS answers are cached per domain for 30 s to 5 min (by TTL), so a burst of checks of one domain costs one lookup per record type. If the resolver fails or times out (3 s), the answer says so in `reasons` and `valid` is false; it is never a 500.",
  ].join("\n"),
  security: securityScheme,
  request: {
    body: jsonBody(VerifyAddressRequestSchema),
  },
  responses: { 200: jsonResponse(VerifyAddressResponseSchema, "The verification result"), ...commonErrors },
});

export const verifyAddressRouter = createRouter().openapi(verifyRoute, async (c) => {
  const result = await verifyEmailAddress(dnsConfig(c.env), c.get("caches").get(dnsAnswerCache), c.env.ASSETS, c.req.valid("json").email);
  return c.json(success(result), 200);
});
