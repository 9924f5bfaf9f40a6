import type { Env } from "../env";
import { isDevelopment } from "../env";
import { ApiError } from "./errors";

/**
 * Reads a secret the deployment must set. A missing secret is an operator
 * error: it fails loudly with the secret's name and how to set it, and never
 * falls back to a default (local defaults live in .dev.vars.example).
 */
export function requireSecret(env: Env, name: keyof Env & string): string {
  const value = env[name];
  if (typeof value === "string" && value.length > 0) return value;
  const message = `Server misconfigured: ${name} is not set. Set it with \`wrangler secret put ${name}\` (or in wrangler.toml [vars] for non-secret settings).`;
  console.error(message);
  throw new ApiError(500, "INTERNAL_ERROR", message);
}

/** Base URL for links the service puts in mail (tracking, unsubscribe), without a trailing slash. */
export function publicUrl(env: Env, requestUrl?: string): string {
  const configured = env.PUBLIC_URL?.replace(/\/+$/, "");
  if (configured) return configured;
  if (isDevelopment(env) && requestUrl) return new URL(requestUrl).origin;
  return requireSecret(env, "PUBLIC_URL");
}

/**
 * Secrets that verify signed links (tracking, unsubscribe): LINK_SIGNING_SECRET,
 * then LINK_SIGNING_SECRET_PREVIOUS when set. New links are always signed with
 * the current secret; during a rotation the previous one keeps the links in
 * mail already sent working until it is removed.
 */
export function linkVerificationSecrets(env: Env): string[] {
  const current = requireSecret(env, "LINK_SIGNING_SECRET");
  const previous = env.LINK_SIGNING_SECRET_PREVIOUS;
  return previous ? [current, previous] : [current];
}
