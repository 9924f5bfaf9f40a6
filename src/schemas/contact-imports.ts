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
    errors: z
      .array(z.object({ row: z.number().int().openapi({ description: "1 = the first data row" }), message: z.string() }))
      .openapi({ description: "The first 100 row errors, by row number" }),
    createdAt: z.string().datetime(),
    finishedAt: z.string().datetime().nullable(),
    failureReason: z
      .string()
      .nullable()
      .openapi({ description: "Why a FAILED import failed (its upload stopped, or it made no progress for 24 hours); null otherwise" }),
  })
  .openapi("ContactImport");
export type ImportJobView = z.infer<typeof ImportJobSchema>;

export const CreateImportQuerySchema = z.object({
  subscribed: booleanQuery(
    "Subscription of rows without a `subscribed` value (new and existing contacts). Without it a new contact is unsubscribed and an existing one keeps its subscription.",
  ),
});

export const ImportListQuerySchema = PaginationQuerySchema;

export const ExportQuerySchema = z.object({
  subscribed: booleanQuery("Only subscribed (true) or unsubscribed (false) contacts"),
  segmentId: idQuery("segmentId", "Only the segment's current members"),
});
