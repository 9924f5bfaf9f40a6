import * as z from "../lib/zod";
import { DOMAIN_STATUSES } from "../db/schema";
import { listEnvelope } from "../lib/openapi";
import { PaginationQuerySchema } from "../lib/pagination";

export const DnsRecordSchema = z
  .object({
    purpose: z.enum(["DKIM", "SPF", "RETURN_PATH_MX", "RETURN_PATH_SPF", "DMARC"]),
    type: z.enum(["TXT", "MX", "CNAME"]),
    name: z.string().openapi({ description: "Fully qualified record name", example: "em202607._domainkey.example.com" }),
    value: z.string().openapi({ description: "Exact value to publish (MX: the host; see priority)" }),
    priority: z.number().int().optional().openapi({ description: "MX priority" }),
    required: z.boolean().openapi({ description: "Needed for VERIFIED (DKIM and SPF); the others are recommended" }),
    status: z.enum(DOMAIN_STATUSES).openapi({
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
    status: z.enum(DOMAIN_STATUSES),
    dkimSelector: z.string().openapi({ example: "em202607" }),
    records: z.array(DnsRecordSchema),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    lastCheckedAt: z.string().datetime().nullable(),
    verifiedAt: z.string().datetime().nullable(),
    nextCheckAt: z.string().datetime().nullable().openapi({ description: "When the background check runs next (null: not scheduled)" }),
    openTracking: z
      .boolean()
      .openapi({ description: "The open pixel in this domain's mail (on by default; the project's trackingMode and a send's track still apply)" }),
    clickTracking: z.boolean().openapi({ description: "Tracked links in this domain's mail (on by default); off: every link exactly as written" }),
    trackingHostname: z
      .string()
      .nullable()
      .openapi({ description: "A custom tracking hostname (a subdomain of this domain), the host of every tracked link and pixel of its mail once VERIFIED" }),
    trackingStatus: z.enum(DOMAIN_STATUSES).nullable().openapi({
      description:
        "PENDING until the hostname is a CNAME to trackingCname, VERIFIED once it is, FAILED when a verified one disappeared; null without a hostname",
    }),
    trackingCname: z.string().optional().openapi({ description: "What trackingHostname's CNAME record must point to (this service's host)" }),
  })
  .openapi("Domain");
/** A sending domain as the API shows it. */
export type DomainView = z.infer<typeof DomainSchema>;

export const DomainListQuerySchema = PaginationQuerySchema.extend({
  status: z
    .enum(DOMAIN_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" } }),
});
export type DomainListQuery = z.infer<typeof DomainListQuerySchema>;

export const DomainListResponseSchema = listEnvelope(DomainSchema);

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

export const UpdateDomainRequestSchema = z
  .object({
    openTracking: z.boolean().optional(),
    clickTracking: z.boolean().optional(),
    trackingHostname: z
      .string()
      .trim()
      .toLowerCase()
      .max(253)
      .regex(HOSTNAME, "Must be a host name such as track.example.com")
      .nullable()
      .optional()
      .openapi({ description: "A subdomain of the domain (e.g. track.example.com) CNAMEd to trackingCname; null removes it" }),
  })
  .strict()
  .openapi("UpdateDomain");
export type UpdateDomainRequest = z.infer<typeof UpdateDomainRequestSchema>;

export const CreateDomainRequestSchema = z.object({
  domain: z.string().max(300).openapi({ example: "example.com", description: "Domain name (IDN allowed)" }),
});
