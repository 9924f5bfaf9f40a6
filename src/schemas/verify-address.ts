import * as z from "../lib/zod";
import { successEnvelope } from "../lib/openapi";

/** POST /v1/verify: address verification (not the DNS checks of sending domains, see schemas/domains). */

export const VerifyAddressRequestSchema = z.object({ email: z.string().trim().min(1).max(512).openapi({ example: "ada@example.com" }) });

export const VerificationSchema = z
  .object({
    email: z.string().openapi({ description: "The address as given, trimmed" }),
    valid: z.boolean().openapi({ description: "Syntax is valid and the domain can receive mail (MX, or A/AAAA fallback)" }),
    isDisposable: z.boolean().openapi({ description: "Domain (or a parent domain) is a known disposable provider" }),
    isAlias: z.boolean().openapi({ description: "Relay service: Apple Hide My Email, Firefox Relay, DuckDuckGo, SimpleLogin, addy.io, Proton Pass..." }),
    isTypo: z.boolean(),
    isPlusAddressed: z.boolean(),
    domainExists: z.boolean(),
    hasMxRecords: z.boolean().openapi({ description: "At least one MX record that is not a null MX (RFC 7505)" }),
    reasons: z
      .array(z.string())
      .openapi({ description: "Human-readable reasons for every flag set and every problem found; empty for a clean, deliverable address" }),
    suggestedEmail: z.string().optional().openapi({ description: "Present when the domain looks like a typo", example: "ada@gmail.com" }),
  })
  .openapi("VerificationResult");
export type VerificationResult = z.infer<typeof VerificationSchema>;

export const VerifyAddressResponseSchema = successEnvelope(VerificationSchema);
