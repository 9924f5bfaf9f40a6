import * as z from "../lib/zod";
import { PaginationQuerySchema } from "../lib/pagination";
import { idQuery } from "../lib/validators";

const booleanQuery = (description: string) =>
  z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({ param: { name: "subscribed", in: "query" }, type: "boolean", description });

export const ImportJobSchema = z
  .object({
    id: z.string(),
    status: z.enum(["PENDING", "PROCESSING", "COMPLETED", "FAILED"]),
    total: z.number().int().openapi({ description: "Data rows, a repeated email counted once (its last row wins); set when the upload is read" }),
    processed: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    failed: z.number().int(),
    duplicates: z.number().int().openapi({
      description: "Rows whose email appears again later in the file: the later row wins, these are not applied (not in `total`, each listed in `errors`)",
    }),
    subscribedDefault: z.boolean().nullable().openapi({
      description:
        "What rows without a subscribed value got (`?subscribed=`): true subscribed, false unsubscribed, null new contacts unsubscribed and existing ones unchanged",
    }),
    errors: z
      .array(z.object({ row: z.number().int().openapi({ description: "1 = the first data row" }), message: z.string() }))
      .openapi({ description: "The first 100 row errors and replaced duplicate rows, by row number" }),
    createdAt: z.string().datetime(),
    finishedAt: z.string().datetime().nullable(),
    failureReason: z
      .string()
      .nullable()
      .openapi({ description: "Why a FAILED import failed (its upload stopped, or it made no progress for 24 hours); null otherwise" }),
  })
  .openapi("ContactImport");
export type ImportJobView = z.infer<typeof ImportJobSchema>;

/** Largest `columns` query (characters): 200 columns with their targets. */
const MAX_COLUMNS_QUERY = 32 * 1024;

const ColumnEntrySchema = z
  .object({
    to: z
      .string()
      .regex(
        /^(email|subscribed|ignore|data\.[A-Za-z0-9_-]{1,64})$/,
        'to is "email", "subscribed", "ignore" or "data.<key>" (a key of 1-64 letters, digits, _ or -)',
      )
      .optional(),
    type: z.enum(["text", "number", "boolean", "date"]).optional(),
  })
  .strict()
  .refine((e) => e.to !== undefined || e.type !== undefined, "each column names a target (to), a type, or both");

/** `columns`: each mapped header's target and type (the column's name as in the file). */
export const ColumnMappingSchema = z.record(z.string().min(1).max(128), ColumnEntrySchema).refine((m) => Object.keys(m).length <= 200, "at most 200 columns");
export type ColumnMapping = z.infer<typeof ColumnMappingSchema>;

export const CreateImportQuerySchema = z.object({
  subscribed: booleanQuery(
    "Subscription of rows without a `subscribed` value (new and existing contacts). Without it a new contact is unsubscribed and an existing one keeps its subscription: say which you want (only people who agreed to hear from you may be subscribed).",
  ),
  columns: z
    .string()
    .max(MAX_COLUMNS_QUERY)
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "columns must be URL-encoded JSON" });
        return z.NEVER;
      }
    })
    .pipe(ColumnMappingSchema)
    .optional()
    .openapi({
      param: { name: "columns", in: "query" },
      type: "string",
      example: '{"Email Address":{"to":"email"},"MEMBER_RATING":{"to":"data.rating","type":"number"},"LEID":{"to":"ignore"}}',
      description:
        'URL-encoded JSON mapping columns by their header name: `{"<header>": {"to": "email"|"subscribed"|"data.<key>"|"ignore", "type": "text"|"number"|"boolean"|"date"}}` (either or both; `date` stores an ISO 8601 string). Columns it leaves out keep what their names give. An unknown header or target is 422 naming `columns`.',
    }),
});

export const ImportListQuerySchema = PaginationQuerySchema;

export const ExportQuerySchema = z.object({
  subscribed: booleanQuery("Only subscribed (true) or unsubscribed (false) contacts"),
  format: z
    .enum(["data", "flat"])
    .default("data")
    .openapi({
      param: { name: "format", in: "query" },
      description:
        "`data` (the default): the data as one JSON column, which imports back unchanged. `flat`: one column per data key (`id,email,subscribed,createdAt,updatedAt,<key>...`, keys sorted; a nested value as JSON), for spreadsheets",
    }),
  bom: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({
      param: { name: "bom", in: "query" },
      type: "boolean",
      description: "Start the file with a UTF-8 byte order mark, so Excel reads accents right",
    }),
  segmentId: idQuery("segmentId", "Only the segment's current members"),
});
