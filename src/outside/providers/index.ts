import type { Database } from "../../db/client";
import type { Env } from "../../env";
import { readConfig } from "../../lib/config";
import { ApiError } from "../../lib/errors";
import { CaptureProvider } from "./capture";
import { CloudflareEmailProvider } from "./cloudflare";
import { SesProvider } from "./ses";
import { ProviderError, type EmailProvider } from "./types";

export { ProviderError } from "./types";
export type { EmailProvider, OutgoingMessage } from "./types";

/** The two streams of mail (src/services/consent/gates.ts), each with its provider. */
type Stream = "TRANSACTIONAL" | "BROADCAST";

/**
 * The provider's name for mail of `stream`: EMAIL_PROVIDER for transactional mail;
 * EMAIL_PROVIDER_BROADCAST (default EMAIL_PROVIDER) for broadcast mail.
 */
export function providerNameFor(env: Env, stream: Stream): string {
  const config = readConfig(env);
  return stream === "BROADCAST" ? (config.EMAIL_PROVIDER_BROADCAST ?? config.EMAIL_PROVIDER) : config.EMAIL_PROVIDER;
}

/** Whether SES sends any of this deployment's mail (its domains are then registered with SES too). */
export const usesSes = (env: Env) => providerNameFor(env, "TRANSACTIONAL") === "ses" || providerNameFor(env, "BROADCAST") === "ses";

/**
 * Why broadcast mail cannot go out here, or null when it can: Cloudflare Email Service carries
 * transactional mail only (https://developers.cloudflare.com/email-service/reference/faq/), so with
 * EMAIL_PROVIDER=cloudflare broadcast mail needs EMAIL_PROVIDER_BROADCAST=ses.
 */
export function broadcastUnavailable(env: Env): string | null {
  if (providerNameFor(env, "BROADCAST") !== "cloudflare") return null;
  return "Broadcast mail (campaigns, topic and marketing sends) cannot be sent here: Cloudflare Email Service carries transactional mail only. The operator sets EMAIL_PROVIDER_BROADCAST=ses (Amazon SES) to send it.";
}

/** The 409 a broadcast gets where no provider can carry it (POST /campaigns/{id}/send, /v1/send). */
export function assertBroadcastAvailable(env: Env): void {
  const reason = broadcastUnavailable(env);
  if (!reason) return;
  throw new ApiError("CONFLICT", reason, {
    errors: [{ field: "stream", message: reason, code: "broadcast_unavailable" }],
    suggestion: "Send it as transactional mail (a TRANSACTIONAL template, no topic), or ask the operator to configure Amazon SES for broadcast mail.",
  });
}

/**
 * The provider named by EMAIL_PROVIDER, or for broadcast mail by EMAIL_PROVIDER_BROADCAST
 * (default EMAIL_PROVIDER). `capture` is refused outside local development and tests, so a
 * deployment can never silently swallow mail; Cloudflare Email Service never carries broadcast mail.
 */
export function getProvider(env: Env, db: Database, stream: Stream = "TRANSACTIONAL"): EmailProvider {
  const { ENVIRONMENT: environment } = readConfig(env);
  const name = providerNameFor(env, stream);
  if (stream === "BROADCAST" && name === "cloudflare") throw new ProviderError(broadcastUnavailable(env)!, false);
  if (name === "ses") return new SesProvider(env);
  if (name === "cloudflare") return new CloudflareEmailProvider(env);
  if (name === "capture" && (environment === "development" || environment === "test")) return new CaptureProvider(db, env.STORAGE);
  const setting = stream === "BROADCAST" && readConfig(env).EMAIL_PROVIDER_BROADCAST ? "EMAIL_PROVIDER_BROADCAST" : "EMAIL_PROVIDER";
  throw new ProviderError(
    name === "capture" ? `${setting}=capture is only allowed when ENVIRONMENT=development` : `Unknown ${setting} "${name}" (use "ses" or "cloudflare")`,
    true,
  );
}
