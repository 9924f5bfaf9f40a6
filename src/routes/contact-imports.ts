import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { ApiError } from "../lib/errors";
import { commonErrors, errorResponse, jsonResponse, listEnvelope, securityScheme, success } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { IdParamSchema } from "../lib/validators";
import { CreateImportQuerySchema, ExportQuerySchema, ImportJobSchema, ImportListQuerySchema } from "../schemas/contact-imports";
import { EXPORT_HEADER, exportContacts, MAX_FLAT_KEYS } from "../services/contact-imports/export";
import { listImports, requireImport, toImportView } from "../services/contact-imports/jobs";
import { createImport, importTooLarge, MAX_IMPORT_BYTES } from "../services/contact-imports/upload";

const tags = ["Contacts"];
const CSV_TYPES = ["text/csv", "application/csv", "text/plain"];

const createRouteDef = createRoute({
  method: "post",
  path: "/contacts/imports",
  operationId: "importContacts",
  tags,
  summary: "Import contacts from a CSV file",
  description: [
    `A \`text/csv\` body (UTF-8, optional BOM, RFC 4180 quoting, CRLF or LF) of up to ${MAX_IMPORT_BYTES} bytes, read as it arrives. 202 with the job; its chunks are processed in the background: poll \`GET /contacts/imports/{id}\`.`,
    "The first row is a header; column names are compared case-insensitively with spaces, `_`, `-` and `.` ignored, so other tools' exports import as they are. An email column is required (`email`, or `Email Address`, `E-mail`, `email_address`, `mail`; 422 without one). `subscribed` (also `Opted In`, `optin`, `opt_in`, `EMAIL_OPT_IN`, `subscribe`; true/false, 1/0, yes/no) is optional; `data` holds a JSON object merged into the contact's data; `id`, `createdAt` and `updatedAt` (from an export) are ignored; every other column becomes a data key in lower camelCase of its words, accents dropped (`First Name` -> `firstName`, `MEMBER_RATING` -> `memberRating`), so segments (`data.firstName`) and templates (`{{firstName}}`) can name it. Two columns that become the same key: 422 `duplicate_column`.",
    "Types: a data column whose every non-empty cell is a decimal number without a leading zero (so postcodes like 02134 stay text) is stored as numbers, one of only `true`/`false` as booleans, anything else as text; an empty cell sets nothing. `columns` sets a column's target and type explicitly (`date` stores ISO 8601); a cell its explicit type cannot read fails the row.",
    "Subscription: rows without a subscribed value get `?subscribed=` (`subscribedDefault` on the job); without it a new contact is unsubscribed and an existing one keeps its subscription. Subscribe only people who agreed to receive your marketing mail.",
    "Existing contacts are updated as by `POST /contacts` (data merged). A repeated email: its last row wins and counts once in `total`; each earlier row counts in `duplicates` and is listed in `errors` with the row that replaced it. A row that cannot be imported (invalid email, bad `subscribed`, `data` or typed cell, over the contacts quota, data over 64 KB once merged) counts in `failed` with its row number (1 = the first data row); the first 100 errors by row are in `errors`. created + updated + failed = total.",
    "Imported contacts start no CONTACT_CREATED / CONTACT_SUBSCRIBED workflows; when the job completes one `contacts.imported` event is recorded (no contact, data `{importId, total, created, updated, failed, duplicates}`).",
    "A malformed file (unbalanced quotes, a row over 128 KB) is refused with 422 and nothing is imported.",
    "The file is kept in object storage (R2) for 7 days after the upload and counts in the project's R2 bytes meanwhile: an upload that would pass `QUOTA_R2_STORED_BYTES` (or a project already past `QUOTA_STORED_BYTES`) is refused with 403 `QUOTA_EXCEEDED` and leaves no job and no file. A project may have 2 imports `PENDING` or `PROCESSING` at once (`MAX_ACTIVE_IMPORTS_PER_PROJECT`); the next upload is refused with 409 `CONFLICT` and nothing is kept.",
    "After a crash an import finishes by itself: an upload that stops sending for 3 minutes becomes `FAILED` with `failureReason`; chunks whose queue messages were lost are queued again by the cron after a minute without progress.",
  ].join("\n\n"),
  security: securityScheme,
  request: {
    query: CreateImportQuerySchema,
    body: { required: true, content: { "text/csv": { schema: z.string().openapi({ example: "email,subscribed,firstName\nada@example.com,true,Ada\n" }) } } },
  },
  responses: {
    202: jsonResponse(ImportJobSchema, "The job, queued"),
    ...commonErrors,
    403: errorResponse(
      "Public key, disabled project, or QUOTA_EXCEEDED: the file would pass the project's R2 bytes quota (or the project is past its stored bytes quota)",
    ),
    409: errorResponse("CONFLICT: the project already has its maximum of imports PENDING or PROCESSING"),
  },
});

const getRouteDef = createRoute({
  method: "get",
  path: "/contacts/imports/{id}",
  operationId: "getContactImport",
  tags,
  summary: "Get a contact import's progress",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(ImportJobSchema, "The job"), ...commonErrors },
});

const listRouteDef = createRoute({
  method: "get",
  path: "/contacts/imports",
  operationId: "listContactImports",
  tags,
  summary: "List contact imports",
  description: "Newest first, keyset (cursor) pagination.",
  security: securityScheme,
  request: { query: ImportListQuerySchema },
  responses: { 200: jsonResponse(listEnvelope(ImportJobSchema), "A page of imports"), ...commonErrors },
});

const exportRouteDef = createRoute({
  method: "get",
  path: "/contacts/export",
  operationId: "exportContacts",
  tags,
  summary: "Export contacts as CSV",
  description: `Streams \`text/csv\` with the header \`${EXPORT_HEADER.join(",")}\` (\`subscribed\` as true/false, dates ISO 8601, \`data\` as JSON), oldest contact first. Imported back with \`POST /contacts/imports\`, it leaves the contacts as they are. \`format=flat\` writes one column per data key instead (at most ${MAX_FLAT_KEYS} keys, 422 naming \`format\` past that); \`bom=true\` starts the file with a UTF-8 byte order mark for Excel.`,
  security: securityScheme,
  request: { query: ExportQuerySchema },
  responses: {
    200: { description: "The contacts", content: { "text/csv": { schema: z.string() } } },
    ...commonErrors,
    404: errorResponse("Unknown segmentId"),
  },
});

export const contactImportsRouter = createRouter()
  .openapi(createRouteDef, async (c) => {
    const type = (c.req.header("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (!CSV_TYPES.includes(type)) {
      throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "The body must be a CSV file (Content-Type: text/csv)", {
        suggestion: "curl --data-binary @contacts.csv -H 'Content-Type: text/csv' ...",
      });
    }
    const length = c.req.header("content-length");
    if (length && Number(length) > MAX_IMPORT_BYTES) throw importTooLarge(MAX_IMPORT_BYTES);
    const body = c.req.raw.body;
    if (!body) throw ApiError.validation([{ field: "body", message: "The CSV is empty: it needs a header row naming an email column", code: "required" }]);
    const { projectId } = c.get("auth");
    const { subscribed, columns } = c.req.valid("query");
    const job = await createImport(getDb(c.env.DB), c.env, c.get("afterCommit"), projectId, body, { defaultSubscribed: subscribed, columns });
    // The upload writes no contacts (its chunks do, and remove the workflow triggers they queue).
    c.get("afterCommit").noWorkflowTriggers(projectId);
    return c.json(toImportView(job), 202);
  })
  .openapi(listRouteDef, async (c) => {
    const page = await listImports(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.json(success({ items: page.items.map(toImportView), nextCursor: page.nextCursor, hasMore: page.hasMore, total: page.total }), 200);
  })
  .openapi(getRouteDef, async (c) => {
    const job = await requireImport(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id);
    return c.json(toImportView(job), 200);
  })
  .openapi(exportRouteDef, async (c) => {
    const stream = await exportContacts(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"));
    return c.body(stream, 200, {
      "Content-Type": "text/csv; charset=utf-8",
      "Content-Disposition": 'attachment; filename="contacts.csv"',
    });
  });
