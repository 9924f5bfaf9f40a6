import { emails, events } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { idAtTime } from "../../lib/ids";
import type { EventView } from "../../schemas/events";
import { type ExportQuery, MAX_EXPORT_DAYS } from "../../schemas/exports";
import { countParts, hotRows, partLines, partsInRange, type PartRef, type RawRow } from "../../store/objects/archive";
import { toEmailView } from "../emails/views";
import { modelOf } from "./read";
import { DAY_MS } from "./run";

/**
 * GET /exports/emails and /exports/events: a project's records of a range of UTC days as NDJSON,
 * streamed as the client reads: the archived days from their R2 parts (decompressed) and what is
 * still in D1 by keyset pages, merged in id (creation) order. Every line is the API's view of the
 * record plus `archived` (true: read from the archive). At most MAX_EXPORT_DAYS days, and at
 * most MAX_EXPORT_PARTS archive objects (each one subrequest) per export.
 */
export type ExportKind = "emails" | "events";
export const MAX_EXPORT_PARTS = 2000;
/** Rows per D1 page; part rows per archive_runs page. */
const HOT_PAGE = 500;
const PARTS_PAGE = 200;

/** The range's UTC day numbers, or the contract's 422 for a bad one. */
export function exportRange(query: ExportQuery): { fromDay: number; toDay: number } {
  const fromDay = Math.floor(Date.parse(`${query.from}T00:00:00Z`) / DAY_MS);
  const toDay = Math.floor(Date.parse(`${query.to}T00:00:00Z`) / DAY_MS);
  if (toDay < fromDay) throw ApiError.validation([{ field: "to", message: "Must be the same day as `from` or later", code: "invalid_range" }]);
  if (toDay - fromDay + 1 > MAX_EXPORT_DAYS) {
    throw ApiError.validation([{ field: "to", message: `A range may cover at most ${MAX_EXPORT_DAYS} days (got ${toDay - fromDay + 1})`, code: "too_big" }]);
  }
  return { fromDay, toDay };
}

const lineOf: Record<ExportKind, (raw: RawRow, archived: boolean) => unknown> = {
  emails: (raw, archived) => ({ ...toEmailView(modelOf(emails, raw)), archived }),
  events: (raw, archived) => {
    const event = modelOf(events, raw);
    const view: EventView = {
      id: event.id,
      name: event.name,
      contactId: event.contactId,
      email: (raw.contact_email as string | null | undefined) ?? null,
      data: event.data ?? {},
      emailId: event.emailId,
      source: event.source,
      createdAt: event.createdAt.toISOString(),
    };
    return { ...view, archived };
  },
};

async function* partsOf(d1: D1Database, kind: ExportKind, projectId: string, range: { fromDay: number; toDay: number }): AsyncGenerator<PartRef> {
  let after = { day: range.fromDay - 1, part: -1 };
  for (;;) {
    const page = await partsInRange(d1, kind, projectId, range, after, PARTS_PAGE);
    yield* page;
    if (page.length < PARTS_PAGE) return;
    const last = page.at(-1) as PartRef;
    after = { day: last.day, part: last.part };
  }
}

async function* hotOf(d1: D1Database, kind: ExportKind, projectId: string, range: { fromDay: number; toDay: number }): AsyncGenerator<RawRow> {
  let after = idAtTime(range.fromDay * DAY_MS);
  const before = idAtTime((range.toDay + 1) * DAY_MS);
  for (;;) {
    const page = await hotRows(d1, kind, projectId, after, before, HOT_PAGE);
    yield* page;
    if (page.length < HOT_PAGE) return;
    after = (page.at(-1) as RawRow).id;
  }
}

/** The export as a stream of NDJSON lines (checks the range and the number of parts before it starts). */
export async function exportRecords(
  d1: D1Database,
  bucket: R2Bucket,
  kind: ExportKind,
  projectId: string,
  query: ExportQuery,
): Promise<ReadableStream<Uint8Array>> {
  const range = exportRange(query);
  const parts = await countParts(d1, kind, projectId, range.fromDay, range.toDay);
  if (parts > MAX_EXPORT_PARTS) {
    throw ApiError.validation([
      {
        field: "from",
        message: `The range holds ${parts} archive parts; one export reads at most ${MAX_EXPORT_PARTS}. Export a shorter range.`,
        code: "too_big",
      },
    ]);
  }
  const toLine = lineOf[kind];
  async function* lines(): AsyncGenerator<string> {
    const archived = partsOf(d1, kind, projectId, range);
    const hot = hotOf(d1, kind, projectId, range);
    let part = await archived.next();
    let row = await hot.next();
    while (!part.done || !row.done) {
      // A part's rows are consecutive ids of its day: the whole part goes where its first id sorts.
      if (!part.done && (row.done || part.value.firstId < row.value.id)) {
        for await (const line of partLines(bucket, part.value.key)) yield `${JSON.stringify(toLine(JSON.parse(line) as RawRow, true))}\n`;
        part = await archived.next();
      } else if (!row.done) {
        yield `${JSON.stringify(toLine(row.value, false))}\n`;
        row = await hot.next();
      }
    }
  }
  const source = lines();
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Up to ~64 KB a pull, so a slow reader holds back the reading of parts and pages.
      let chunk = "";
      while (chunk.length < 65_536) {
        const next = await source.next();
        if (next.done) {
          if (chunk) controller.enqueue(encoder.encode(chunk));
          controller.close();
          return;
        }
        chunk += next.value;
      }
      controller.enqueue(encoder.encode(chunk));
    },
    async cancel() {
      await source.return(undefined);
    },
  });
}
