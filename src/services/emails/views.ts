import { and, eq, type SQL } from "drizzle-orm";
import type { Database } from "../../db/client";
import { emails, type Email } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { listNewestFirst } from "../../lib/pagination";
import { FINAL_STATUS, PENDING_STATUS } from "../../store/emails";
import type { EmailListQuery, EmailView } from "../../schemas/emails";
import { readArchivedEmail } from "../archive/read";
import { gateOfError, streamOf } from "../consent/gates";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toEmailView(email: Email): EmailView {
  return {
    id: email.id,
    contactId: email.contactId,
    templateId: email.templateId,
    campaignId: email.campaignId,
    from: email.fromAddress,
    fromName: email.fromName,
    to: email.toAddress,
    replyTo: email.replyTo,
    subject: email.subject,
    status: email.status,
    stream: streamOf(email),
    error: email.error,
    gate: email.status === "FAILED" ? gateOfError(email.error) : null,
    messageId: email.messageId,
    providerMessageId: email.providerMessageId,
    attempts: email.attempts,
    opens: email.opens,
    clicks: email.clicks,
    queuedAt: iso(email.queuedAt),
    sentAt: iso(email.sentAt),
    deliveredAt: iso(email.deliveredAt),
    openedAt: iso(email.openedAt),
    clickedAt: iso(email.clickedAt),
    bouncedAt: iso(email.bouncedAt),
    complainedAt: iso(email.complainedAt),
    failedAt: iso(email.failedAt),
    createdAt: email.createdAt.toISOString(),
    updatedAt: email.updatedAt.toISOString(),
  };
}

export async function getEmail(db: Database, projectId: string, id: string): Promise<Email> {
  const email = await db.query.emails.findFirst({ where: and(eq(emails.id, id), eq(emails.projectId, projectId)) });
  if (!email) throw ApiError.notFound("Email");
  return email;
}

/**
 * GET /emails/{id}: the email from D1, or, once it left the hot window, from its day archive in R2
 * (`archived`; the id's UUIDv7 time names the day). 404 when neither holds it.
 */
export async function getEmailOrArchived(db: Database, bucket: R2Bucket, projectId: string, id: string): Promise<{ email: Email; archived: boolean }> {
  const email = await db.query.emails.findFirst({ where: and(eq(emails.id, id), eq(emails.projectId, projectId)) });
  if (email) return { email, archived: false };
  const archived = await readArchivedEmail(db.$client, bucket, projectId, id);
  if (!archived) throw ApiError.notFound("Email");
  return { email: archived, archived: true };
}

/**
 * Newest first, keyset pagination on id; filters use (project_id, status, id) for final statuses,
 * (status, updated_at) for QUEUED and SENDING (each partial index is chosen by its term), and (contact_id, id).
 */
export async function listEmails(db: Database, projectId: string, query: EmailListQuery) {
  const filters: SQL[] = [eq(emails.projectId, projectId)];
  if (query.status) {
    const pending = query.status === "QUEUED" || query.status === "SENDING";
    filters.push(eq(emails.status, query.status), pending ? PENDING_STATUS : FINAL_STATUS);
  }
  if (query.contactId) filters.push(eq(emails.contactId, query.contactId));
  if (query.campaignId) filters.push(eq(emails.campaignId, query.campaignId));
  const page = await listNewestFirst(db, emails, and(...filters), query);
  return { ...page, items: page.items.map(toEmailView) };
}
