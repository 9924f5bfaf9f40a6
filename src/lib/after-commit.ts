/**
 * What leaves after a write commits: the webhook events it recorded and the
 * workflow triggers it left in the outbox. One AfterCommit per invocation
 * (a request, a queue batch, a cron tick, a workflow step: src/hand-over.ts)
 * hands them to their queues once the invocation's work is done. Nothing is
 * lost when it never runs: both are in D1 and the cron drains them.
 */

/** A webhook event a batch recorded. */
export interface RecordedEvent {
  id: string;
  projectId: string;
}

/** What a committed batch recorded (a BatchResult of src/store/batch.ts). */
export interface Committed {
  readonly webhookEvents: readonly RecordedEvent[];
  /** Per project whose outbox the batch probed: whether workflow triggers wait there. */
  readonly workflowTriggers: ReadonlyMap<string, boolean>;
}

export interface AfterCommit {
  committed(result: Committed): void;
}

/** The per-invocation door (src/hand-over.ts HandOver), as requests and consumers see it. */
export interface HandOverDoor extends AfterCommit {
  /** Whether a committed batch probed the project's workflow outbox. */
  probed(projectId: string): boolean;
  /** A write whose batch did not probe may have left workflow triggers: the flush dispatches the project's. */
  mayHaveWorkflowTriggers(projectId: string): void;
  /** The invocation wrote nothing that starts a workflow (no dispatch, unless a batch found triggers). */
  noWorkflowTriggers(projectId: string): void;
  /** Hands everything committed so far to the queues; never throws. */
  flush(): Promise<void>;
}
