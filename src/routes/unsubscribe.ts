import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppBindings } from "../env";
import { requireSecret } from "../lib/config";
import { ApiError } from "../lib/errors";
import { errorResponse } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { parseUnsubscribeToken } from "../services/tracking/links";
import { unsubscribeByEmail } from "../services/tracking/unsubscribe";

const tags = ["Unsubscribe"];

const TokenParam = z.object({
  token: z.string().openapi({ param: { name: "token", in: "path" }, description: "Signed token from the email's unsubscribe link" }),
});

const NO_CACHE = { "Cache-Control": "no-store" };

const pageRoute = createRoute({
  method: "get",
  path: "/unsubscribe/{token}",
  tags,
  summary: "Unsubscribe page",
  description:
    "The link in mail (`{{unsubscribeUrl}}`, List-Unsubscribe). Needs no key: the signed token identifies the email, and through it the contact and project. Sets the contact to unsubscribed, records `contact.unsubscribed` once, and shows a confirmation page.",
  request: { params: TokenParam },
  responses: {
    200: { description: "Confirmation page", content: { "text/html": { schema: z.string() } } },
    400: { description: "Invalid or forged link (HTML page)", content: { "text/html": { schema: z.string() } } },
    404: { description: "The email of this link no longer exists (HTML page)", content: { "text/html": { schema: z.string() } } },
  },
});

const oneClickRoute = createRoute({
  method: "post",
  path: "/unsubscribe/{token}",
  tags,
  summary: "One-click unsubscribe (RFC 8058)",
  description:
    "What mail clients call for `List-Unsubscribe-Post: List-Unsubscribe=One-Click`: a form body `List-Unsubscribe=One-Click` (application/x-www-form-urlencoded or multipart/form-data). Needs no key. Idempotent.",
  request: {
    params: TokenParam,
    body: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": { schema: z.object({ "List-Unsubscribe": z.literal("One-Click") }) },
        "multipart/form-data": { schema: z.object({ "List-Unsubscribe": z.literal("One-Click") }) },
      },
    },
  },
  responses: {
    200: { description: "Unsubscribed (also when already unsubscribed)", content: { "text/plain": { schema: z.string() } } },
    400: errorResponse("Invalid or forged token, or a body without List-Unsubscribe=One-Click"),
    404: errorResponse("The email of this link no longer exists"),
  },
});

function page(title: string, text: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222;line-height:1.5}</style>
</head><body><h1>${title}</h1><p>${text}</p></body></html>`;
}

const htmlPage = (c: Context<AppBindings>, status: 200 | 400 | 404, title: string, text: string) =>
  c.body(page(title, text), status, { "Content-Type": "text/html; charset=utf-8", ...NO_CACHE });

async function emailIdOf(c: Context<AppBindings>, token: string) {
  return parseUnsubscribeToken(requireSecret(c.env, "LINK_SIGNING_SECRET"), token);
}

async function readForm(c: Context<AppBindings>): Promise<Record<string, unknown>> {
  const type = (c.req.header("Content-Type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) {
    throw new ApiError(400, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/x-www-form-urlencoded or multipart/form-data", {
      suggestion: "Send the form body List-Unsubscribe=One-Click (RFC 8058).",
    });
  }
  try {
    return await c.req.parseBody();
  } catch {
    throw new ApiError(400, "BAD_REQUEST", "The form body could not be read");
  }
}

export const unsubscribeRouter = createRouter();

unsubscribeRouter
  .openapi(pageRoute, async (c) => {
    const { token } = c.req.valid("param");
    const emailId = await emailIdOf(c, token);
    if (!emailId) {
      return htmlPage(c, 400, "Invalid unsubscribe link", "This link is not valid. Please use the unsubscribe link exactly as it appears in the email.");
    }
    const outcome = await unsubscribeByEmail(getDb(c.env.DB), emailId, "page");
    if (outcome === "unknown-email") {
      return htmlPage(c, 404, "Link expired", "The message this link belongs to no longer exists, so there is nothing to unsubscribe from.");
    }
    return htmlPage(c, 200, "You are unsubscribed", "You will no longer receive these emails. You can close this page.");
  })
  // Registered without a body validator: the form is read and checked by hand so that
  // a wrong content type or value is a 400 as RFC 8058 clients expect, never a 422.
  .post("/unsubscribe/:token", async (c) => {
    const { token } = c.req.param();
    const emailId = await emailIdOf(c, token);
    if (!emailId) throw new ApiError(400, "BAD_REQUEST", "Invalid unsubscribe token");
    const form = await readForm(c);
    if (form["List-Unsubscribe"] !== "One-Click") {
      throw new ApiError(400, "BAD_REQUEST", "The body must be List-Unsubscribe=One-Click", {
        suggestion: "See RFC 8058: POST the form field List-Unsubscribe with the value One-Click.",
      });
    }
    const outcome = await unsubscribeByEmail(getDb(c.env.DB), emailId, "one-click");
    if (outcome === "unknown-email") throw ApiError.notFound("Email");
    return c.body("Unsubscribed", 200, { "Content-Type": "text/plain; charset=utf-8", ...NO_CACHE });
  });

unsubscribeRouter.openAPIRegistry.registerPath(oneClickRoute);
