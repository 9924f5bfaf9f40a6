import { z } from "@hono/zod-openapi";

export const SendingStatusSchema = z
  .object({
    paused: z.boolean().openapi({ description: "True while the reputation breaker has paused sending: /v1/send and campaign sends are 403 SENDING_PAUSED" }),
    pausedAt: z.string().datetime().nullable(),
    reason: z.string().nullable().openapi({ example: "Bounce rate 6.20% (31 of 500 emails sent) over the last 7 days is above the 5% limit" }),
    window: z
      .object({
        days: z.number().int(),
        sent: z.number().int(),
        bounced: z.number().int().openapi({ description: "Permanent bounces" }),
        complained: z.number().int(),
      })
      .openapi({ description: "Counts of the current window (UTC days, today included); a resume starts a fresh window" }),
    limits: z.object({
      minSent: z.number().int().openapi({ description: "Emails sent in the window before the rates are judged" }),
      maxBounceRate: z.number().openapi({ example: 0.05 }),
      maxComplaintRate: z.number().openapi({ example: 0.001 }),
    }),
  })
  .openapi("SendingStatus");

export type SendingStatusView = z.infer<typeof SendingStatusSchema>;
