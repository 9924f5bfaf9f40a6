import type { Env } from "../../env";
import { readConfig, requireSecret } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { replyAddress } from "../inbound/reply-token";

/**
 * Reply tracking (CONTRACT "Inbound email"): with replies tracked an email's Reply-To is its signed
 * reply address, `r+<token>@INBOUND_DOMAIN`, so a reply comes back to the Worker's email() handler
 * naming the email it answers. Decided when the email is delivered, on every path that creates mail
 * (/v1/send, campaigns and their test sends, workflow SEND_EMAIL steps), so both providers get it:
 * - the send's own `trackReplies` (emails.track_replies): true replaces even a Reply-To the mail has
 *   (the send's `reply`, its template's); false keeps the Reply-To as it is;
 * - else the project's default (PATCH /project inbound.trackReplies), which never replaces a
 *   Reply-To the mail already has: only mail without one gets the reply address.
 * Without INBOUND_DOMAIN nothing is replaced (the API refuses to turn tracking on without it).
 */
export async function replyToOf(
  env: Env,
  email: { id: string; replyTo: string | null; trackReplies: boolean | null; projectTracksReplies: boolean },
): Promise<string | null> {
  const domain = readConfig(env).INBOUND_DOMAIN;
  if (!domain) return email.replyTo;
  const tracked = email.trackReplies ?? (email.projectTracksReplies && !email.replyTo);
  return tracked ? replyAddress(requireSecret(env, "LINK_SIGNING_SECRET"), domain, email.id) : email.replyTo;
}

/** The deployment's inbound domain (INBOUND_DOMAIN, lower case), or a 409 naming INBOUND_DOMAIN (`field`: what asked for reply tracking). */
export function requireInboundDomain(domain: string | null | undefined, field: string): string {
  if (domain) return domain;
  const message = "Reply tracking needs an inbound domain, and this deployment has none: INBOUND_DOMAIN is not set";
  throw new ApiError("CONFLICT", message, {
    errors: [{ field, message, code: "inbound_domain_unset" }],
    suggestion: "Ask the operator to set INBOUND_DOMAIN and route its mail to the Worker (docs/deploy.md#receiving-mail), or leave trackReplies off.",
  });
}
