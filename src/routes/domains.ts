import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { controlDb } from "../db/shards";
import { createRouter } from "../lib/router";
import { commonErrors, errorResponse, jsonBody, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { createDomain, deleteDomain, getDomain, listDomains, toDomainView, verifiedDomainCache, verifyDomainNow } from "../services/domains";
import { CreateDomainRequestSchema, DomainListQuerySchema, DomainListResponseSchema, DomainSchema, UpdateDomainRequestSchema } from "../schemas/domains";
import { trackingCnameTarget, updateDomainTrackingSettings } from "../services/tracking/control";

const tags = ["Domains"];

const STATES =
  "Status: PENDING until the required DKIM and SPF records are found through DNS-over-HTTPS; checked on create, on POST /domains/{id}/verify and every minute or so by a Cron Trigger with back-off (1, 2, 5, 10, 30, then 60 minutes), FAILED if not found within 72 hours of creation. A VERIFIED domain is re-checked every 6 hours; a required record that disappears is marked FAILED (with failingSince) and the domain becomes FAILED if it is still missing 72 hours later.";

const listRoute = createRoute({
  method: "get",
  path: "/domains",
  operationId: "listDomains",
  tags,
  summary: "List sending domains",
  description: `Newest first, cursor pagination. ${STATES}`,
  security: securityScheme,
  request: {
    query: DomainListQuerySchema,
  },
  responses: { 200: jsonResponse(DomainListResponseSchema, "A page of domains"), ...commonErrors },
});

const createDomainRoute = createRoute({
  method: "post",
  path: "/domains",
  operationId: "createDomain",
  tags,
  summary: "Add a sending domain",
  description: `The name is normalised (lower-case, IDN to punycode, trailing dot dropped); IP addresses and bare top-level domains are refused (422). A domain belongs to one project at most: adding one that any project already has is 409 CONFLICT, and so is one whose identity already exists in the shared Amazon SES account (its DKIM key is never replaced). A project may have at most QUOTA_DOMAINS domains (default 50; past it 403 QUOTA_EXCEEDED). A domain not verified within 72 hours of being added is FAILED (check-now can still verify it), and one still never verified 7 days after it was added is released: deleted, with its SES identity, so the name is free again. The service generates a 2048-bit RSA DKIM key for the domain and answers the records to publish; it checks DNS once right away. ${STATES}`,
  security: securityScheme,
  request: {
    body: jsonBody(CreateDomainRequestSchema),
  },
  responses: {
    201: jsonResponse(DomainSchema, "The domain, with the DNS records to publish"),
    409: errorResponse("The domain already belongs to a project (CONFLICT)"),
    ...commonErrors,
  },
});

const getRoute = createRoute({
  method: "get",
  path: "/domains/{id}",
  operationId: "getDomain",
  tags,
  summary: "Get a sending domain with per-record status",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(DomainSchema, "The domain"), ...commonErrors },
});

const verifyRoute = createRoute({
  method: "post",
  path: "/domains/{id}/verify",
  operationId: "verifyDomain",
  tags,
  summary: "Check the domain's DNS records now",
  description:
    "Looks every record up immediately (no cache) and answers the updated domain. Also re-checks a FAILED domain, which becomes VERIFIED once its records are right. A resolver failure changes no status; it is reported in the records' detail.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(DomainSchema, "The domain after the check"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/domains/{id}",
  operationId: "updateDomain",
  tags,
  summary: "Change a sending domain's tracking",
  description:
    "`openTracking` / `clickTracking` (both on by default) switch the pixel and tracked links of this domain's mail (the project's trackingMode and a send's `track` still apply). `trackingHostname`, a subdomain of the domain such as track.example.com, is the host of every tracked link and pixel of its mail once its CNAME to `trackingCname` is found (checked at once, and again with POST /domains/{id}/verify and the domain's scheduled checks); until then the service's own host is used. A hostname of another domain: 409 CONFLICT. Takes effect within a few seconds for mail being sent.",
  security: securityScheme,
  request: { params: IdParamSchema, body: jsonBody(UpdateDomainRequestSchema) },
  responses: { 200: jsonResponse(DomainSchema, "The domain"), ...commonErrors },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/domains/{id}",
  operationId: "deleteDomain",
  tags,
  summary: "Remove a sending domain",
  description:
    "Refused with 400 INVALID_STATE while a template's `from` address is on this domain (and, once campaigns exist, an unsent campaign's). With Amazon SES as the provider, the domain's identity is deleted from the SES account too (if SES cannot be reached, nothing is deleted: 503 SERVICE_UNAVAILABLE, retry).",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const domainsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const page = await listDomains(getDb(controlDb(c.env)), c.get("auth").projectId, c.req.valid("query"));
    const target = trackingCnameTarget(c.env);
    return c.json(
      success({ items: page.items.map((d) => toDomainView(d, target)), nextCursor: page.nextCursor, hasMore: page.hasMore, total: page.total }),
      200,
    );
  })
  .openapi(createDomainRoute, async (c) => {
    const domain = await createDomain(getDb(controlDb(c.env)), c.env, c.get("auth").projectId, c.req.valid("json").domain, c.get("afterCommit"));
    return c.json(toDomainView(domain, trackingCnameTarget(c.env)), 201);
  })
  .openapi(getRoute, async (c) => {
    const domain = await getDomain(getDb(controlDb(c.env)), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toDomainView(domain, trackingCnameTarget(c.env)), 200);
  })
  .openapi(updateRoute, async (c) => {
    const db = getDb(controlDb(c.env));
    const domain = await getDomain(db, c.get("auth").projectId, c.req.valid("param").id);
    const updated = await updateDomainTrackingSettings(db, c.env, domain, c.req.valid("json"));
    return c.json(toDomainView(updated, trackingCnameTarget(c.env)), 200);
  })
  .openapi(verifyRoute, async (c) => {
    const domain = await verifyDomainNow(getDb(controlDb(c.env)), c.env, c.get("auth").projectId, c.req.valid("param").id, c.get("afterCommit"));
    return c.json(toDomainView(domain, trackingCnameTarget(c.env)), 200);
  })
  .openapi(deleteRoute, async (c) => {
    await deleteDomain(getDb(controlDb(c.env)), c.env, c.get("auth").projectId, c.req.valid("param").id, c.get("caches").get(verifiedDomainCache));
    return c.body(null, 204);
  });
