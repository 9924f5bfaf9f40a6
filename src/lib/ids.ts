import { v7 as uuidv7 } from "uuid";

/**
 * New record id: a UUIDv7, so ids sort by creation time. Lists page by
 * (project_id, id), which gives a stable keyset order without a separate
 * created_at tiebreaker.
 */
export const newId = (): string => uuidv7();
