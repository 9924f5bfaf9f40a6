import { and, eq } from "drizzle-orm";
import type { Database } from "../../db/client";
import { contactImports, type ContactImport } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { listNewestFirst } from "../../lib/pagination";
import type { ImportJobView } from "../../schemas/contact-imports";

/** Reading import jobs, and their API view (GET /contacts/imports, /contacts/imports/{id}). */

/** Row errors kept on a job (the first by row number). */
export const MAX_KEPT_ERRORS = 100;

export function toImportView(job: ContactImport): ImportJobView {
  return {
    id: job.id,
    status: job.status,
    total: job.total,
    processed: job.processed,
    created: job.created,
    updated: job.updated,
    failed: job.failed,
    duplicates: job.duplicates,
    subscribedDefault: job.defaultSubscribed ?? null,
    errors: job.errors,
    createdAt: job.createdAt.toISOString(),
    finishedAt: job.finishedAt ? job.finishedAt.toISOString() : null,
    failureReason: job.failureReason ?? null,
  };
}

export async function getImport(db: Database, projectId: string, id: string): Promise<ContactImport | undefined> {
  return db.query.contactImports.findFirst({ where: and(eq(contactImports.id, id), eq(contactImports.projectId, projectId)) });
}

export async function requireImport(db: Database, projectId: string, id: string): Promise<ContactImport> {
  const job = await getImport(db, projectId, id);
  if (!job) throw ApiError.notFound("Import");
  return job;
}

export async function listImports(db: Database, projectId: string, page: { limit: number; cursor?: string }) {
  return listNewestFirst(db, contactImports, eq(contactImports.projectId, projectId), page);
}
