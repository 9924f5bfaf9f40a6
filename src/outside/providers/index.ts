import type { Database } from "../../db/client";
import type { Env } from "../../env";
import { readConfig } from "../../lib/config";
import { CaptureProvider } from "./capture";
import { CloudflareEmailProvider } from "./cloudflare";
import { SesProvider } from "./ses";
import { ProviderError, type EmailProvider } from "./types";

export { ProviderError } from "./types";
export type { EmailProvider, OutgoingMessage } from "./types";

/**
 * The provider named by EMAIL_PROVIDER. `capture` is refused outside local
 * development and tests, so a deployment can never silently swallow mail.
 */
export function getProvider(env: Env, db: Database): EmailProvider {
  const { EMAIL_PROVIDER: name, ENVIRONMENT: environment } = readConfig(env);
  if (name === "ses") return new SesProvider(env);
  if (name === "cloudflare") return new CloudflareEmailProvider(env);
  if (name === "capture" && (environment === "development" || environment === "test")) return new CaptureProvider(db, env.STORAGE);
  throw new ProviderError(
    name === "capture" ? "EMAIL_PROVIDER=capture is only allowed when ENVIRONMENT=development" : `Unknown EMAIL_PROVIDER "${name}" (use "ses" or "cloudflare")`,
    true,
  );
}
