import type { Domain } from "../../db/schema";
import type { DomainView } from "../../schemas/domains";

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** `cnameTarget`: what a tracking hostname's CNAME must point to (the API's answers give it; webhook events do not). */
export function toDomainView(domain: Domain, cnameTarget?: string): DomainView {
  return {
    id: domain.id,
    domain: domain.name,
    status: domain.status,
    dkimSelector: domain.dkimSelector,
    records: domain.records.map((r) => ({
      purpose: r.purpose,
      type: r.type,
      name: r.name,
      value: r.value,
      ...(r.priority === undefined ? {} : { priority: r.priority }),
      required: r.required,
      status: r.status,
      ...(r.detail ? { detail: r.detail } : {}),
      ...(r.failingSince ? { failingSince: r.failingSince } : {}),
    })),
    createdAt: domain.createdAt.toISOString(),
    updatedAt: domain.updatedAt.toISOString(),
    lastCheckedAt: iso(domain.lastCheckedAt),
    verifiedAt: iso(domain.verifiedAt),
    nextCheckAt: iso(domain.nextCheckAt),
    openTracking: domain.openTracking ?? true,
    clickTracking: domain.clickTracking ?? true,
    trackingHostname: domain.trackingHostname ?? null,
    trackingStatus: domain.trackingStatus ?? null,
    ...(cnameTarget ? { trackingCname: cnameTarget } : {}),
  };
}
