import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { createRouter } from "../lib/router";
import { jsonResponse } from "../lib/openapi";

const healthRoute = createRoute({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  security: [],
  tags: ["Service"],
  summary: "Liveness check",
  description: "Needs no key and touches no storage.",
  responses: {
    200: jsonResponse(z.object({ status: z.literal("ok"), timestamp: z.string().datetime() }), "The service is up"),
  },
});

export const healthRouter = createRouter().openapi(healthRoute, (c) => c.json({ status: "ok" as const, timestamp: new Date().toISOString() }, 200));
