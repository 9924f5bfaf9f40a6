import type { BatchItem } from "drizzle-orm/batch";
import type { AfterCommit, Committed, RecordedEvent } from "../lib/after-commit";
import type { ConfigInput } from "../lib/config";
import { runGuarded } from "./guards";
import { eventSources, triggerProbes } from "./marks";

export { probesWorkflowTriggers, recordsWebhookEvents } from "./marks";

/**
 * A write batch that names its parts: callers add statements (one D1 batch,
 * one transaction, one round trip) and get a handle per part; the result
 * answers each handle's rows, the webhook events the batch recorded and
 * whether it left workflow triggers. No caller reads a D1 batch result by
 * position. Statements that record webhook events or probe the workflow
 * outbox say so themselves (recordsWebhookEvents, probesWorkflowTriggers),
 * so a batch finds them wherever they sit.
 *
 *   const batch = new WriteBatch(d1);
 *   const upsert = batch.add(...upsertStatements);
 *   const result = await batch.run({ env, afterCommit });
 *   result.rows(upsert);
 */

type Rows = Record<string, unknown>[];
/** What a batch takes: prepared statements (fixed SQL) and drizzle query-builder statements. */
export type Statement = D1PreparedStatement | BatchItem<"sqlite">;

/** A part of a batch: the statements one `add` put in, in order. */
export interface Part {
  readonly batch: WriteBatch;
  readonly start: number;
  readonly count: number;
}

export interface RunOptions {
  /** Turns a guard's abort (a quota, the suppression check) into the API's error (runGuarded). */
  env?: ConfigInput;
  now?: Date;
  /** Told about the committed batch: its recorded events and trigger probes leave through it (lib/after-commit.ts). */
  afterCommit?: AfterCommit;
}

function prepared(d1: D1Database, statement: Statement): D1PreparedStatement {
  if (!("toSQL" in statement)) return statement as D1PreparedStatement;
  const query = (statement as unknown as { toSQL(): { sql: string; params: unknown[] } }).toSQL();
  return d1.prepare(query.sql).bind(...query.params);
}

export class WriteBatch {
  private readonly statements: D1PreparedStatement[] = [];
  private ran = false;

  constructor(readonly d1: D1Database) {}

  /** Adds statements (null and undefined skipped) as one part; answers its handle. */
  add(...statements: (Statement | null | undefined)[]): Part {
    if (this.ran) throw new Error("WriteBatch: add after run");
    const start = this.statements.length;
    for (const s of statements) if (s) this.statements.push(prepared(this.d1, s));
    return { batch: this, start, count: this.statements.length - start };
  }

  get size(): number {
    return this.statements.length;
  }

  /** Runs every statement in one D1 batch (nothing when empty) and answers the result. */
  async run(options: RunOptions = {}): Promise<BatchResult> {
    if (this.ran) throw new Error("WriteBatch: run twice");
    this.ran = true;
    let answers: D1Result<Record<string, unknown>>[] = [];
    if (this.statements.length > 0) {
      const execute = () => this.d1.batch<Record<string, unknown>>(this.statements);
      answers = options.env ? await runGuarded(options.env, execute, options.now) : await execute();
    }
    const result = new BatchResult(
      this,
      this.statements,
      answers.map((a) => a.results ?? []),
      answers.map((a) => a.meta?.changes ?? 0),
    );
    options.afterCommit?.committed(result);
    return result;
  }
}

export class BatchResult implements Committed {
  /** Webhook events the batch recorded (from statements marked recordsWebhookEvents). */
  readonly webhookEvents: RecordedEvent[] = [];
  /** Per project probed (probesWorkflowTriggers): whether workflow triggers wait in its outbox. */
  readonly workflowTriggers = new Map<string, boolean>();

  constructor(
    private readonly batch: WriteBatch,
    statements: readonly D1PreparedStatement[],
    private readonly results: readonly Rows[],
    private readonly changed: readonly number[] = [],
  ) {
    statements.forEach((statement, i) => {
      const rows = results[i] ?? [];
      if (eventSources.has(statement)) {
        for (const r of rows) if (typeof r.id === "string" && typeof r.project_id === "string") this.webhookEvents.push({ id: r.id, projectId: r.project_id });
      }
      const probe = triggerProbes.get(statement);
      if (probe) this.workflowTriggers.set(probe.projectId, (this.workflowTriggers.get(probe.projectId) ?? false) || probe.pending(rows));
    });
  }

  private own(part: Part): void {
    if (part.batch !== this.batch) throw new Error("BatchResult: a part of another batch");
  }

  /** Each statement's rows of the part, in the order added. */
  each(part: Part): Rows[] {
    this.own(part);
    return this.results.slice(part.start, part.start + part.count) as Rows[];
  }

  /** Every row of the part's statements, in order. */
  rows(part: Part): Rows {
    return this.each(part).flat();
  }

  /** Rows the part's statements wrote (D1's meta.changes, summed). */
  changes(part: Part): number {
    this.own(part);
    return this.changed.slice(part.start, part.start + part.count).reduce((a, b) => a + b, 0);
  }

  /** The ids of the events the part's statements recorded (a part of record statements). */
  eventIds(part: Part): string[] {
    return this.rows(part).flatMap((r) => (typeof r.id === "string" ? [r.id] : []));
  }

  /** Whether the probed project has workflow triggers waiting (undefined: the batch did not probe it). */
  workflowTriggersPending(projectId: string): boolean | undefined {
    return this.workflowTriggers.get(projectId);
  }
}

/** No fixed SQL here. */
export const FIXED_SQL = {};
