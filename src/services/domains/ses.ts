/**
 * Amazon SES "bring your own DKIM" (BYODKIM): registers a domain's own DKIM
 * key with SES so SES signs its mail with the key the owner published.
 * SES v2 HTTP API, signed with SigV4 by aws4fetch.
 */
import { AwsClient } from "aws4fetch";
import type { Env } from "../../env";

export class SesRegistrationError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "SesRegistrationError";
  }
}

export function sesBaseUrl(env: Pick<Env, "SES_ENDPOINT" | "SES_REGION">): string {
  return (env.SES_ENDPOINT || `https://email.${env.SES_REGION || "us-east-1"}.amazonaws.com`).replace(/\/+$/, "");
}

async function sesError(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { message?: string; Message?: string };
    return body.message ?? body.Message ?? text.slice(0, 200);
  } catch {
    return text.slice(0, 200) || `HTTP ${response.status}`;
  }
}

/**
 * `CreateEmailIdentity` with `DkimSigningAttributes`; when the identity
 * already exists in the SES account (409), its key is replaced with
 * `PutEmailIdentityDkimSigningAttributes` instead.
 */
export async function registerDomainWithSes(
  env: Pick<Env, "SES_ENDPOINT" | "SES_REGION" | "SES_ACCESS_KEY_ID" | "SES_SECRET_ACCESS_KEY">,
  domain: string,
  selector: string,
  privateKeyPkcs8Base64: string,
): Promise<void> {
  if (!env.SES_ACCESS_KEY_ID || !env.SES_SECRET_ACCESS_KEY) {
    throw new SesRegistrationError("SES_ACCESS_KEY_ID and SES_SECRET_ACCESS_KEY secrets are not set");
  }
  const client = new AwsClient({
    accessKeyId: env.SES_ACCESS_KEY_ID,
    secretAccessKey: env.SES_SECRET_ACCESS_KEY,
    region: env.SES_REGION || "us-east-1",
    service: "ses",
  });
  const base = sesBaseUrl(env);
  const signing = { DomainSigningSelector: selector, DomainSigningPrivateKey: privateKeyPkcs8Base64 };
  const created = await client.fetch(`${base}/v2/email/identities`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ EmailIdentity: domain, DkimSigningAttributes: signing }),
  });
  if (created.ok) return;
  if (created.status !== 409) {
    throw new SesRegistrationError(`SES CreateEmailIdentity failed: ${await sesError(created)}`, created.status);
  }
  await created.body?.cancel();
  const put = await client.fetch(`${base}/v2/email/identities/${encodeURIComponent(domain)}/dkim/signing`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ SigningAttributesOrigin: "EXTERNAL", SigningAttributes: signing }),
  });
  if (!put.ok) {
    throw new SesRegistrationError(`SES PutEmailIdentityDkimSigningAttributes failed: ${await sesError(put)}`, put.status);
  }
}
