import { z } from "@hono/zod-openapi";

export const STATUS = ["PENDING", "VERIFIED", "FAILED"] as const;

export const DnsRecordSchema = z
  .object({
    purpose: z.enum(["DKIM", "SPF", "RETURN_PATH_MX", "RETURN_PATH_SPF", "DMARC"]),
    type: z.enum(["TXT", "MX", "CNAME"]),
    name: z.string().openapi({ description: "Fully qualified record name", example: "em202607._domainkey.example.com" }),
    value: z.string().openapi({ description: "Exact value to publish (MX: the host; see priority)" }),
    priority: z.number().int().optional().openapi({ description: "MX priority" }),
    required: z.boolean().openapi({ description: "Needed for VERIFIED (DKIM and SPF); the others are recommended" }),
    status: z.enum(STATUS).openapi({
      description:
        "VERIFIED: found with this value at the last check; PENDING: not found yet; FAILED: a verified record that disappeared, or not found when the domain's verification failed",
    }),
    detail: z.string().optional().openapi({ description: "What the last check found, in words" }),
    failingSince: z.string().datetime().optional().openapi({ description: "Since when a once-verified record is missing" }),
  })
  .openapi("DomainDnsRecord");

export const DomainSchema = z
  .object({
    id: z.string(),
    domain: z.string().openapi({ description: "Normalised name: lower-case, IDN as punycode", example: "example.com" }),
    status: z.enum(STATUS),
    dkimSelector: z.string().openapi({ example: "em202607" }),
    records: z.array(DnsRecordSchema),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    lastCheckedAt: z.string().datetime().nullable(),
    verifiedAt: z.string().datetime().nullable(),
    nextCheckAt: z.string().datetime().nullable().openapi({ description: "When the background check runs next (null: not scheduled)" }),
  })
  .openapi("Domain");
