type Rows = Record<string, unknown>[];

/**
 * Marks statements carry for a WriteBatch (store/batch.ts): a statement that
 * records webhook events, or probes the workflow outbox, says so where it is
 * built, so the batch finds it wherever a caller put it.
 */

export const eventSources = new WeakSet<D1PreparedStatement>();
export const triggerProbes = new WeakMap<D1PreparedStatement, { projectId: string; pending: (rows: Rows) => boolean }>();

/** Marks a statement whose RETURNING rows (`id`, `project_id`) are webhook events it recorded. */
export function recordsWebhookEvents(statement: D1PreparedStatement): D1PreparedStatement {
  eventSources.add(statement);
  return statement;
}

/**
 * Marks a statement whose rows say whether the project has workflow triggers
 * waiting in the outbox (default: any row means yes), so the hand-over after
 * the commit dispatches them (or skips the dispatch when none are waiting).
 */
export function probesWorkflowTriggers(
  statement: D1PreparedStatement,
  projectId: string,
  pending: (rows: Rows) => boolean = (rows) => rows.length > 0,
): D1PreparedStatement {
  triggerProbes.set(statement, { projectId, pending });
  return statement;
}

/** No fixed SQL here. */
export const FIXED_SQL = {};
