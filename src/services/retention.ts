import { and, eq, inArray, lt, sql } from "drizzle-orm";
import { getDb, runBatch, type Database } from "../db/client";
import { capturedMessages, emailAttachments, emails } from "../db/schema";
import type { Env } from "../env";
import { readConfig } from "../lib/config";
import { idAtTime } from "../lib/ids";
import { pruneWebhookDeliveries } from "./webhooks/sweep";
import { deleteOldEmails, dropOldHtml } from "../store/emails";
import { pruneEvents } from "../store/events";
import { utcDayNumber } from "../store/guards";
import { pruneFinishedExecutions } from "../store/executions";
import { pruneWorkflowVersions } from "../store/workflows";
import { countProjects, fixContactsCounter, fixDailyCounters, pruneDailyCounters, usagePage, type UsageCounters } from "../store/usage";
import { deleteAttachments } from "../store/attachments";
import { deleteCapturedMessages } from "../store/captured";
import { pruneInbound, staleReceived } from "../store/inbound";
import { INBOUND_RETENTION_DAYS } from "../store/objects/prefixes";
import { enqueueInbound } from "../queues";

/**
 * Retention, run by the cron in bounded batches so one tick never does
 * unbounded work and one tenant cannot fill the shared D1 for ever:
 * - attachment rows are deleted once every email of their send is final (no
 *   longer QUEUED or SENDING): nothing will read them again (their R2 objects
 *   expire with the HTML, by the `attachments/` lifecycle rule);
 * - email HTML left in D1 is dropped EMAIL_HTML_RETENTION_DAYS (default 30) after the
 *   email was created; the record, its status, subject and counters stay. A sent email's
 *   HTML left D1 when it was sent (R2, store/objects/bodies.ts; expired there by the bucket's
 *   lifecycle rule, locally by the objectExpiry job), so this drops what failed, what was sent
 *   before migration 0029, and what was sent while its bodies object could not be written;
 * - email records (final ones) are deleted EMAIL_RETENTION_DAYS (default 365) after;
 * - events are deleted EVENT_RETENTION_DAYS (default 365) after they happened;
 * - workflow versions no execution will read again, an hour after they were
 *   superseded; finished executions WORKFLOW_EXECUTION_RETENTION_DAYS (90) after;
 * - mail kept by the local `capture` provider goes with the HTML (rows here,
 *   objects by the `captured/` lifecycle rule);
 * - received mail (inbound_messages) INBOUND_RETENTION_DAYS (30) after it arrived; its raw
 *   objects by the `inbound/` lifecycle rule of the bucket (store/objects/prefixes.ts, created by
 *   `npm run setup:cloudflare`; locally the objectExpiry job), which also takes their bytes off
 *   r2_usage. Rows still RECEIVED after INBOUND_REQUEUE_MS (their queue message was lost) are
 *   queued again.
 * Ids are UUIDv7, so "older than" is an id range on the primary key.
 */
const DAY_MS = 24 * 60 * 60 * 1000;
/** Sends whose attachment rows one tick deletes (rows written before migration 0030 take their blob chunks, up to ~10 MB, with them). */
const ATTACHMENT_SENDS_PER_TICK = 20;
const HTML_ROWS_PER_TICK = 500;
const EMAIL_ROWS_PER_TICK = 1000;
const VERSION_ROWS_PER_TICK = 200;
const EXECUTION_ROWS_PER_TICK = 1000;
/** A superseded workflow version is kept this long, so an execution being started on it has read it. */
const VERSION_GRACE_MS = 60 * 60 * 1000;
const EVENT_ROWS_PER_TICK = 2000;
const CAPTURED_ROWS_PER_TICK = 200;
const USAGE_ROWS_PER_TICK = 5000;
const INBOUND_ROWS_PER_TICK = 1000;
/** A received message not parsed this long after it arrived lost its queue message (or is still retrying: redelivery is harmless). */
const INBOUND_REQUEUE_MS = 15 * 60 * 1000;
const INBOUND_REQUEUE_PER_TICK = 100;
/** Attachments of sends whose every email is final: their rows (and the blob chunks of rows written before migration 0030). */
export async function deleteFinishedAttachments(db: Database, limit = ATTACHMENT_SENDS_PER_TICK) {
  const pending = db
    .select({ sendId: emails.sendId })
    .from(emails)
    .where(and(eq(emails.sendId, emailAttachments.sendId), inArray(emails.status, ["QUEUED", "SENDING"])));
  const rows = await db.selectDistinct({ sendId: emailAttachments.sendId }).from(emailAttachments).where(sql`NOT EXISTS ${pending}`).limit(limit);
  const sendIds = rows.map((r) => r.sendId);
  if (sendIds.length === 0) return 0;
  const attachments = await db
    .select({
      sendId: emailAttachments.sendId,
      blobId: emailAttachments.blobId,
    })
    .from(emailAttachments)
    .where(inArray(emailAttachments.sendId, sendIds));
  await runBatch(
    db,
    deleteAttachments(
      db.$client,
      sendIds,
      attachments.map((a) => a.blobId),
    ),
  );
  return sendIds.length;
}

/** Empties the HTML of final emails older than the retention, oldest first; the records stay. */
export async function dropOldEmailHtml(db: Database, env: Env, now = new Date(), limit = HTML_ROWS_PER_TICK) {
  const cutoff = idAtTime(now.getTime() - readConfig(env).EMAIL_HTML_RETENTION_DAYS * DAY_MS);
  const { results } = await dropOldHtml(db.$client, cutoff, limit).all();
  return results.length;
}

/** Deletes final email records older than EMAIL_RETENTION_DAYS, oldest first. */
export async function pruneOldEmails(db: Database, env: Env, now = new Date(), limit = EMAIL_ROWS_PER_TICK) {
  const cutoff = idAtTime(now.getTime() - readConfig(env).EMAIL_RETENTION_DAYS * DAY_MS);
  const { results } = await deleteOldEmails(db.$client, cutoff, limit).all();
  return results.length;
}

/** Deletes workflow versions no execution will read again (see pruneWorkflowVersions). */
export async function pruneOldWorkflowVersions(env: Env, now = new Date(), limit = VERSION_ROWS_PER_TICK) {
  const { results } = await pruneWorkflowVersions(env.DB, now.getTime() - VERSION_GRACE_MS, limit).all();
  return results.length;
}

/** Deletes finished workflow executions older than WORKFLOW_EXECUTION_RETENTION_DAYS, oldest first. */
export async function pruneOldExecutions(env: Env, now = new Date(), limit = EXECUTION_ROWS_PER_TICK) {
  const before = now.getTime() - readConfig(env).WORKFLOW_EXECUTION_RETENTION_DAYS * DAY_MS;
  const { results } = await pruneFinishedExecutions(env.DB, idAtTime(before), before, limit).all();
  return results.length;
}

/** Deletes events older than the retention, oldest first. */
export async function pruneOldEvents(db: Database, env: Env, now = new Date(), limit = EVENT_ROWS_PER_TICK) {
  const cutoff = idAtTime(now.getTime() - readConfig(env).EVENT_RETENTION_DAYS * DAY_MS);
  const deleted = await pruneEvents(db.$client, cutoff, limit);
  return deleted.length;
}

/** Mail kept by the capture provider (local development) goes with the HTML retention. */
export async function pruneCapturedMail(db: Database, env: Env, now = new Date(), limit = CAPTURED_ROWS_PER_TICK) {
  const cutoff = idAtTime(now.getTime() - readConfig(env).EMAIL_HTML_RETENTION_DAYS * DAY_MS);
  const rows = await db.select({ id: capturedMessages.id }).from(capturedMessages).where(lt(capturedMessages.id, cutoff)).limit(limit);
  if (rows.length === 0) return 0;
  await runBatch(
    db,
    deleteCapturedMessages(
      db.$client,
      rows.map((r) => r.id),
    ),
  );
  return rows.length;
}

/** Received messages older than INBOUND_RETENTION_DAYS, oldest first (their raw objects expire by the lifecycle rule). */
export async function pruneOldInbound(db: Database, now = new Date(), limit = INBOUND_ROWS_PER_TICK) {
  const { results } = await pruneInbound(db.$client, idAtTime(now.getTime() - INBOUND_RETENTION_DAYS * DAY_MS), limit).all();
  return results.length;
}

/** Received messages still RECEIVED long after they arrived: queued again (the consumer skips what it already parsed). */
export async function requeueStaleInbound(env: Env, now = new Date(), limit = INBOUND_REQUEUE_PER_TICK) {
  const { results } = await staleReceived(env.DB, idAtTime(now.getTime() - INBOUND_REQUEUE_MS), limit).all<{ id: string; project_id: string }>();
  for (const row of results) await enqueueInbound(env, { inboundId: row.id, projectId: row.project_id });
  return results.length;
}

/** Daily usage counters of days before yesterday (the quotas read only today's). */
export async function pruneDailyUsage(db: Database, now = new Date(), limit = USAGE_ROWS_PER_TICK) {
  const result = await pruneDailyCounters(db.$client, utcDayNumber(now) - 1, limit).run();
  return result.meta.changes ?? 0;
}

/** The cron job: one bounded batch of each kind. */
export async function runRetention(env: Env, now = new Date()) {
  const db = getDb(env.DB);
  return {
    attachments: await deleteFinishedAttachments(db),
    html: await dropOldEmailHtml(db, env, now),
    emails: await pruneOldEmails(db, env, now),
    events: await pruneOldEvents(db, env, now),
    workflowVersions: await pruneOldWorkflowVersions(env, now),
    workflowExecutions: await pruneOldExecutions(env, now),
    captured: await pruneCapturedMail(db, env, now),
    usage: await pruneDailyUsage(db, now),
    webhooks: await pruneWebhookDeliveries(env, now),
    inbound: await pruneOldInbound(db, now),
    inboundRequeued: await requeueStaleInbound(env, now),
  };
}

/** Projects whose usage counters one tick recounts (each count is bounded by the project's quotas). */
const USAGE_PROJECTS_PER_TICK = 20;

/**
 * Recounts the trigger-kept usage counters (contacts, today's events and
 * emails) of one page of projects and sets them right where they drifted,
 * with a warning naming the project and both values. Pages rotate with the
 * minute, so every project is recounted once every ceil(projects / 20) ticks.
 */
export async function reconcileUsageCounters(env: Env, now = new Date(), perTick = USAGE_PROJECTS_PER_TICK) {
  const d1 = env.DB;
  const day = utcDayNumber(now);
  const total = (await countProjects(d1).first<{ n: number }>())?.n ?? 0;
  if (total === 0) return { projects: 0, fixed: 0 };
  const pages = Math.ceil(total / perTick);
  const page = Math.floor(now.getTime() / 60_000) % pages;
  const { results: before } = await usagePage(d1, day, page * perTick, perTick).all<UsageCounters>();
  if (before.length === 0) return { projects: 0, fixed: 0 };
  const fixes = await d1.batch<Partial<UsageCounters>>(before.flatMap((p) => [fixContactsCounter(d1, p.projectId), fixDailyCounters(d1, p.projectId, day)]));
  const was = new Map(before.map((p) => [p.projectId, p]));
  let fixed = 0;
  for (const row of fixes.flatMap((r) => r.results)) {
    fixed++;
    const old = was.get(row.projectId as string);
    const drift = (["contacts", "events", "emails"] as const)
      .filter((k) => row[k] !== undefined && row[k] !== old?.[k])
      .map((k) => `${k} ${old?.[k]} -> ${row[k]}`);
    console.warn(`usage counters drifted for project ${row.projectId} (day ${day}): ${drift.join(", ") || "recounted"}`);
  }
  return { projects: before.length, fixed };
}
