import type { Env } from "../env";

/**
 * The one place ProjectLimiter instances are named: one instance per project
 * and purpose, so one project's traffic (or one kind of it) never limits another.
 * - "api": the secret-key API limit, named by the project id alone (the name
 *   deployed limiters already use);
 * - "public": the pk_ key limit of /v1/track, `public:<projectId>`;
 * - "send": the project's sending-rate bucket, `send:<projectId>`;
 * - "webhook": WEBHOOK step calls per minute, `webhook:<projectId>`;
 * - "deliveries": event webhook delivery attempts per minute, `deliveries:<projectId>`.
 */
export type LimiterPurpose = "api" | "public" | "send" | "webhook" | "deliveries";

export function limiterName(purpose: LimiterPurpose, projectId: string): string {
  return purpose === "api" ? projectId : `${purpose}:${projectId}`;
}

export function projectLimiter(env: Pick<Env, "PROJECT_LIMITER">, purpose: LimiterPurpose, projectId: string) {
  return env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName(limiterName(purpose, projectId)));
}
