import type { Domain } from "../../db/schema";
import type { DomainView } from "../../schemas/domains";

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function toDomainView(domain: Domain): DomainView {
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
  };
}
