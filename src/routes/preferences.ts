import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getDb } from "../db/client";
import { shardDb, shardEnv, shardsFrom } from "../db/shards";
import { linkVerificationSecrets } from "../lib/config";
import type { AppBindings } from "../lib/context";
import { ApiError } from "../lib/errors";
import { escapeHtml, tryAgainPage } from "../lib/html";
import { errorResponse } from "../lib/openapi";
import { createRouter } from "../lib/router";
import * as z from "../lib/zod";
import { assertClientWithinLimit } from "../middleware/client-limit";
import { MOVE_RETRY_SECONDS, shardsInMovesCache } from "../services/shards/moving";
import { readPreferences, savePreferences, type PreferencesState } from "../services/topics-preferences";
import { heldByMove } from "../services/tracking/held";
import { parseLinkId, parsePreferencesToken } from "../services/tracking/links";

const tags = ["Preferences"];

const TokenParam = z.object({
  token: z.string().openapi({ param: { name: "token", in: "path" }, description: "Signed token from the email's `{{preferencesUrl}}` link" }),
});

const html = { "text/html": { schema: z.string() } };

const pageRoute = createRoute({
  method: "get",
  path: "/preferences/{token}",
  operationId: "getPreferencesPage",
  security: [],
  tags,
  summary: "Preference page",
  description:
    "The page of `{{preferencesUrl}}`: needs no key (the signed token names the email, and through it the project and the address) and no JavaScript. It shows the project's name, its PUBLIC topics and the PRIVATE ones the contact is in (OPT_IN or PENDING), each a checkbox, and an 'Unsubscribe from all marketing' button. Reading it changes nothing. The link works while the email's record is kept (EMAIL_HOT_DAYS).",
  request: { params: TokenParam },
  responses: {
    200: { description: "The page", content: html },
    400: { description: "Invalid or forged token (an HTML page)", content: html },
    404: { description: "The email or the contact no longer exists (an HTML page)", content: html },
  },
});

const saveRoute = createRoute({
  method: "post",
  path: "/preferences/{token}",
  operationId: "savePreferences",
  security: [],
  tags,
  summary: "Save the preference page",
  description:
    "The page's form (`application/x-www-form-urlencoded` or `multipart/form-data`): `topics=<key>` for each checked box (each topic shown and not named is opted out), or `all=off` to unsubscribe from all marketing (the topic choices stay). A contact unsubscribed from all that saves with a box checked is subscribed again. A topic's double opt-in does not apply here: the signed link proves the address. Each change records an event (`topic.opted_in`, `topic.opted_out`, `contact.subscribed`, `contact.unsubscribed`) and a `contact.topics.updated` webhook event. Answers the page again. Limited per client like the other key-less routes (429).",
  request: {
    params: TokenParam,
    body: {
      content: {
        "application/x-www-form-urlencoded": {
          schema: z.object({ topics: z.union([z.string(), z.array(z.string())]).optional(), all: z.literal("off").optional() }),
        },
      },
    },
  },
  responses: {
    200: { description: "Saved; the page again", content: html },
    400: { description: "Invalid or forged token (an HTML page), or a body that is not a form (the error envelope)", content: html },
    404: { description: "The email or the contact no longer exists (an HTML page)", content: html },
    429: errorResponse("Too many requests from this client"),
    503: { description: "The project is moving between databases; nothing was changed (Retry-After)", content: html },
  },
});

const STYLE = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1f2937;background:#fff;line-height:1.5}
h1{font-size:1.5rem;margin-bottom:.25rem}fieldset{border:1px solid #9ca3af;border-radius:.5rem;padding:1rem;margin:1.5rem 0}legend{font-weight:600;padding:0 .25rem}
.topic{display:flex;gap:.75rem;align-items:flex-start;margin:.75rem 0}.topic input{width:1.25rem;height:1.25rem;margin-top:.15rem}.topic label{font-weight:600}
.hint{display:block;color:#374151;font-size:.95rem}.notice{background:#eef2ff;border:1px solid #4338ca;border-radius:.5rem;padding:.75rem 1rem}
button{font:inherit;padding:.6rem 1.25rem;border-radius:.375rem;cursor:pointer;margin:.25rem .5rem .25rem 0}
.primary{background:#1d4ed8;color:#fff;border:1px solid #1d4ed8}.secondary{background:#fff;color:#991b1b;border:1px solid #991b1b}
button:focus-visible,input:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}`;

function page(c: Context, status: 200 | 400 | 404, title: string, body: string): Response {
  const doc = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
  return c.body(doc, status, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" });
}

function preferencesPage(c: Context, token: string, state: PreferencesState, saved: boolean): Response {
  const project = escapeHtml(state.projectName || "this sender");
  const action = `/preferences/${escapeHtml(encodeURIComponent(token))}`;
  const topics = state.topics
    .map((t, i) => {
      const id = `topic-${i}`;
      const hint = [t.description ? escapeHtml(t.description) : "", t.pending ? "Waiting for you to confirm by the link we emailed you." : ""]
        .filter(Boolean)
        .join(" ");
      return `<div class="topic"><input type="checkbox" id="${id}" name="topics" value="${escapeHtml(t.key)}"${t.checked ? " checked" : ""}${hint ? ` aria-describedby="${id}-hint"` : ""}>
<div><label for="${id}">${escapeHtml(t.name)}</label>${hint ? `<span class="hint" id="${id}-hint">${hint}</span>` : ""}</div></div>`;
    })
    .join("\n");
  const status = saved ? `<p class="notice" role="status">Your preferences are saved.</p>` : "";
  const unsubscribed = state.subscribed
    ? ""
    : `<p class="notice">You are unsubscribed from all marketing email from ${project}.${state.topics.length > 0 ? " Check a topic and save to receive it again." : ""}</p>`;
  const list =
    state.topics.length > 0
      ? `<fieldset><legend>Email I want to receive</legend>\n${topics}\n</fieldset><button type="submit" class="primary" name="save" value="1">Save preferences</button>`
      : "";
  const body = `<h1>Email preferences</h1>
<p>For <strong>${escapeHtml(state.email)}</strong> at ${project}.</p>
${status}${unsubscribed}
<form method="post" action="${action}">
${list}
<button type="submit" class="secondary" name="all" value="off">Unsubscribe from all marketing</button>
</form>`;
  return page(c, 200, `Email preferences - ${state.projectName || "preferences"}`, body);
}

const invalid = (c: Context) =>
  page(c, 400, "Invalid link", `<h1>Invalid link</h1><p>This link is not valid. Please use the link exactly as it appears in the email.</p>`);
const gone = (c: Context) => page(c, 404, "Link expired", `<h1>Link expired</h1><p>We no longer have the message or the address this link belongs to.</p>`);

async function emailIdOf(c: Context<AppBindings>, token: string) {
  const id = await parsePreferencesToken(linkVerificationSecrets(c.env), token);
  return id ? parseLinkId(id) : null;
}

async function readForm(c: Context<AppBindings>): Promise<{ topics: string[]; all: boolean }> {
  const type = (c.req.header("Content-Type") ?? "").toLowerCase();
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data")) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/x-www-form-urlencoded or multipart/form-data", {
      suggestion: "Submit the preference page's form.",
    });
  }
  let form: Record<string, unknown>;
  try {
    form = await c.req.parseBody({ all: true });
  } catch {
    throw new ApiError("BAD_REQUEST", "The form body could not be read");
  }
  const raw = form.topics;
  const topics = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((v): v is string => typeof v === "string").slice(0, 200);
  return { topics, all: form.all === "off" };
}

export const preferencesRouter = createRouter();

preferencesRouter
  .openapi(pageRoute, async (c) => {
    const { token } = c.req.valid("param");
    const named = await emailIdOf(c, token);
    if (!named) return invalid(c);
    for (const shard of shardsFrom(c.env, named.shard)) {
      const state = await readPreferences(getDb(shardDb(c.env, shard)), named.emailId);
      if (state === "unknown-email") continue;
      if (state === "unknown-contact") return gone(c);
      return preferencesPage(c, token, state, false);
    }
    return gone(c);
  })
  // Registered without a body validator: the form is read by hand (a checkbox list, HTML form semantics).
  .post("/preferences/:token", async (c) => {
    await assertClientWithinLimit(c.env, "preferences", c.req.raw.headers);
    const { token } = c.req.param();
    const named = await emailIdOf(c, token);
    if (!named) return invalid(c);
    const form = await readForm(c);
    for (const shard of shardsFrom(c.env, named.shard)) {
      const env = shardEnv(c.env, shard);
      if (await heldByMove(c.env, shard, getDb(env.DB), named.emailId, c.get("caches").get(shardsInMovesCache))) return tryAgainPage(c, MOVE_RETRY_SECONDS);
      const state = await savePreferences(getDb(env.DB), env, named.emailId, form, c.get("afterCommit"));
      if (state === "unknown-email") continue;
      if (state === "unknown-contact") return gone(c);
      return preferencesPage(c, token, state, true);
    }
    return gone(c);
  });

preferencesRouter.openAPIRegistry.registerPath(saveRoute);
