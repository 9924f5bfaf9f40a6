import * as z from "../lib/zod";

/** GET /exports/emails and /exports/events: a range of whole UTC days. */
export const MAX_EXPORT_DAYS = 366;

const day = (name: "from" | "to", description: string) =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, "Must be a date as YYYY-MM-DD")
    .refine((value) => !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value), {
      message: "Must be a real calendar date (YYYY-MM-DD)",
    })
    .openapi({ param: { name, in: "query" }, example: name === "from" ? "2026-01-01" : "2026-01-30", description });

export const ExportQuerySchema = z.object({
  from: day("from", "First UTC day of the range (YYYY-MM-DD), included"),
  to: day("to", `Last UTC day of the range (YYYY-MM-DD), included; at most ${MAX_EXPORT_DAYS} days after \`from\` counted inclusively`),
});
export type ExportQuery = z.infer<typeof ExportQuerySchema>;
