import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { commonErrors, securityScheme } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { ExportQuerySchema, MAX_EXPORT_DAYS } from "../schemas/exports";
import { type ExportKind, exportRecords, MAX_EXPORT_PARTS } from "../services/archive/export";

const tags = ["Exports"];

const RANGE = `A range of whole UTC days, \`from\` and \`to\` included (YYYY-MM-DD), at most ${MAX_EXPORT_DAYS} days; \`to\` before \`from\`, a longer range or one holding more than ${MAX_EXPORT_PARTS} archive parts is 422 naming the field. Secret key only.`;
const STREAM =
  "Streams `application/x-ndjson`, one record a line, oldest first: records older than the hot window (`EMAIL_HOT_DAYS`, default 90 days) are read from the project's day archives in R2, newer ones from the database, so an export covers what lists no longer show. Records past their retention (365 days by default) are gone from both.";

/** What both routes share (OpenAPI). */
const common = (description: string) => ({
  method: "get" as const,
  tags,
  description: [STREAM, description, RANGE].join(" "),
  security: securityScheme,
  request: { query: ExportQuerySchema },
  responses: {
    200: { description: "The records, one JSON object a line", content: { "application/x-ndjson": { schema: z.string() } } },
    ...commonErrors,
  },
});

const emailsRoute = createRoute({
  ...common(
    "Each line is an email as `GET /emails/{id}` shows it (without `html`), plus `archived` (true: read from the archive). An archived email is a snapshot: its `contactId` stays as it was when archived, even if the contact was deleted since.",
  ),
  path: "/exports/emails",
  operationId: "exportEmails",
  summary: "Export emails of a date range (NDJSON)",
});
const eventsRoute = createRoute({
  ...common("Each line is an event as `GET /events` lists it, plus `archived`. An archived event keeps its contact's `email` as it was when archived."),
  path: "/exports/events",
  operationId: "exportEvents",
  summary: "Export events of a date range (NDJSON)",
});

// zod-openapi types a media type naming "json" as a JSON body: the NDJSON stream is returned `as never`.
const headers = (kind: ExportKind, from: string, to: string) => ({
  "Content-Type": "application/x-ndjson; charset=utf-8",
  "Content-Disposition": `attachment; filename="${kind}-${from}-${to}.ndjson"`,
});

export const exportsRouter = createRouter()
  .openapi(emailsRoute, async (c) => {
    const query = c.req.valid("query");
    const stream = await exportRecords(c.env.DB, c.env.STORAGE, "emails", c.get("auth").projectId, query);
    return c.body(stream, 200, headers("emails", query.from, query.to)) as never;
  })
  .openapi(eventsRoute, async (c) => {
    const query = c.req.valid("query");
    const stream = await exportRecords(c.env.DB, c.env.STORAGE, "events", c.get("auth").projectId, query);
    return c.body(stream, 200, headers("events", query.from, query.to)) as never;
  });
