import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { createRouter } from "../lib/router";
import { commonErrors, jsonResponse, securityScheme, success } from "../lib/openapi";
import { IdParamSchema } from "../lib/validators";
import { AttachmentParamSchema, InboundMessageDetailSchema, InboundListQuerySchema, InboundListResponseSchema, RepliesQuerySchema } from "../schemas/inbound";
import { getInbound, inboundAttachment, inboundHtml, inboundRaw, listInboundMessages, listReplies, toInboundDetail } from "../services/inbound/read";

const tags = ["Inbound"];

const RECEIVING =
  "Mail sent to an email's reply address (`r+<token>@INBOUND_DOMAIN`, its `Reply-To` when replies are tracked) or to a named address of the project (`<name>+<project id without dashes>@INBOUND_DOMAIN`) is received by the Worker's email() handler, stored as it came and parsed by a queue consumer; messages are kept 30 days. Secret key only.";

const listRoute = createRoute({
  method: "get",
  path: "/inbound",
  operationId: "listInbound",
  tags,
  summary: "List received messages",
  description: `${RECEIVING} Newest first, cursor pagination; filter by \`emailId\` (replies to that email), \`contactId\` or \`campaignId\` (replies to its emails).`,
  security: securityScheme,
  request: { query: InboundListQuerySchema },
  responses: { 200: jsonResponse(InboundListResponseSchema, "A page of received messages"), ...commonErrors },
});

const getRoute = createRoute({
  method: "get",
  path: "/inbound/{id}",
  operationId: "getInbound",
  tags,
  summary: "Get a received message",
  description: `The message with its text, the References it carried and its attachments' metadata. ${RECEIVING}`,
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: jsonResponse(InboundMessageDetailSchema, "The message"), ...commonErrors },
});

const rawRoute = createRoute({
  method: "get",
  path: "/inbound/{id}/raw",
  operationId: "getInboundRaw",
  tags,
  summary: "Download the raw message",
  description:
    "The message exactly as it was received (`message/rfc822`), always as a download (`Content-Disposition: attachment`). 404 once it is no longer stored.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: { description: "The raw message", content: { "message/rfc822": { schema: z.string() } } }, ...commonErrors },
});

const attachmentRoute = createRoute({
  method: "get",
  path: "/inbound/{id}/attachments/{n}",
  operationId: "getInboundAttachment",
  tags,
  summary: "Download an attachment",
  description:
    "Attachment `n` (its position in `attachments`, from 0), read from the raw message on request; always `Content-Disposition: attachment` with `X-Content-Type-Options: nosniff`, never shown inline. A message larger than the 8 MiB parse cap lists no attachments: 400 INVALID_STATE, download the raw message instead.",
  security: securityScheme,
  request: { params: AttachmentParamSchema },
  responses: { 200: { description: "The attachment's content", content: { "application/octet-stream": { schema: z.string() } } }, ...commonErrors },
});

const htmlRoute = createRoute({
  method: "get",
  path: "/inbound/{id}/html",
  operationId: "getInboundHtml",
  tags,
  summary: "Get a received message's HTML",
  description:
    "The message's HTML part as the sender wrote it, read from the raw message on request (never stored). It is untrusted: the answer carries `Content-Security-Policy: sandbox` (no script, no requests) and `X-Content-Type-Options: nosniff`; show it only in a sandboxed frame (`<iframe sandbox srcdoc>`), as the dashboard does. 404 when the message has no HTML part; 400 INVALID_STATE above the 8 MiB parse cap.",
  security: securityScheme,
  request: { params: IdParamSchema },
  responses: { 200: { description: "The HTML part", content: { "text/html": { schema: z.string() } } }, ...commonErrors },
});

const repliesRoute = createRoute({
  method: "get",
  path: "/emails/{id}/replies",
  operationId: "listEmailReplies",
  tags,
  summary: "List the replies to an email",
  description:
    "The received messages linked to this email (by its reply address or by In-Reply-To / References), newest first; auto-replies included, flagged `autoReply`. 404 for an email of another project.",
  security: securityScheme,
  request: { params: IdParamSchema, query: RepliesQuerySchema },
  responses: { 200: jsonResponse(InboundListResponseSchema, "A page of replies"), ...commonErrors },
});

/** A header-safe file name for Content-Disposition: ASCII fallback plus RFC 5987 filename*. */
function disposition(filename: string | null, fallback: string): string {
  const name = (filename ?? "").replace(/[\r\n"\\/]/g, "_").trim() || fallback;
  const ascii = name.replace(/[^\x20-\x7e]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

const TOKEN_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

export const inboundRouter = createRouter()
  .openapi(listRoute, async (c) => {
    return c.json(success(await listInboundMessages(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("query"))), 200);
  })
  .openapi(getRoute, async (c) => {
    return c.json(toInboundDetail(await getInbound(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id)), 200);
  })
  .openapi(rawRoute, async (c) => {
    const { row, body } = await inboundRaw(getDb(c.env.DB), c.env.STORAGE, c.get("auth").projectId, c.req.valid("param").id);
    return c.body(body, 200, {
      "Content-Type": "message/rfc822",
      "Content-Disposition": `attachment; filename="${row.id}.eml"`,
      "X-Content-Type-Options": "nosniff",
    }) as never;
  })
  .openapi(attachmentRoute, async (c) => {
    const { id, n } = c.req.valid("param");
    const attachment = await inboundAttachment(getDb(c.env.DB), c.env.STORAGE, c.get("auth").projectId, id, n);
    const type = attachment.contentType.toLowerCase();
    return c.body(attachment.content, 200, {
      "Content-Type": TOKEN_TYPE.test(type) ? type : "application/octet-stream",
      "Content-Disposition": disposition(attachment.filename, `attachment-${n}`),
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy": "sandbox; default-src 'none'",
    }) as never;
  })
  .openapi(htmlRoute, async (c) => {
    const html = await inboundHtml(getDb(c.env.DB), c.env.STORAGE, c.get("auth").projectId, c.req.valid("param").id);
    return c.body(html, 200, {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "no-store",
    }) as never;
  })
  .openapi(repliesRoute, async (c) => {
    const page = c.req.valid("query");
    return c.json(success(await listReplies(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("param").id, page)), 200);
  });
