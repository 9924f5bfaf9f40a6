import { createMiddleware } from "hono/factory";
import type { AppBindings } from "../lib/context";
import { ApiError } from "../lib/errors";
import { jsonCharsOutsideAttachmentContent, MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS } from "../schemas/send";

/**
 * POST /v1/send: refuses (413) a body whose JSON outside `attachments[].content`
 * is over MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS, measured by a linear scan
 * before JSON.parse, so 15 MB of tiny keys never becomes a heap of objects.
 * A body that passes is parsed here once and left in Hono's body cache for the validator.
 */
export const sendShape = createMiddleware<AppBindings>(async (c, next) => {
  if (c.req.method !== "POST") return next();
  const text = await c.req.text();
  const outside = jsonCharsOutsideAttachmentContent(text);
  if (outside > MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS) {
    throw new ApiError(
      "PAYLOAD_TOO_LARGE",
      `The request is ${outside} characters without its attachments' content; the limit is ${MAX_SEND_JSON_CHARS_OUTSIDE_ATTACHMENTS}`,
      {
        suggestion: "Only attachments may make a /v1/send request large: keep body, data and headers within their own limits.",
      },
    );
  }
  try {
    const parsed: unknown = JSON.parse(text);
    c.req.bodyCache.json = Promise.resolve(parsed);
  } catch {
    // Malformed: the validator parses it again and answers 400.
  }
  await next();
});
