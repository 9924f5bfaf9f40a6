import { v7 as uuidv7 } from "uuid";

/**
 * New record id: a UUIDv7, so ids sort by creation time. Lists page by
 * (project_id, id), which gives a stable keyset order without a separate
 * created_at tiebreaker.
 */
export const newId = (): string => uuidv7();

/**
 * The lowest UUIDv7 of a moment: every id made at or after `ms` sorts at or
 * above it. Lets "created before T" and "created today" use the id indexes.
 */
export function idAtTime(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0").slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The moment (ms) a UUIDv7 was made, from its first 48 bits; null for anything else. */
export function timeOfId(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return null;
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
