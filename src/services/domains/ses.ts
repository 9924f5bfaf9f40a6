/**
 * Amazon SES "bring your own DKIM" (BYODKIM): registers a domain's own DKIM
 * key with SES so SES signs its mail with the key the owner published.
 * SES v2 HTTP API, signed with SigV4 by aws4fetch.
 */
import { sesApi, sesErrorMessage, SES_NOT_CONFIGURED, type SesEnv } from "../../outside/providers/ses-client";

/** SES identity calls happen inside API requests: bounded well under a request's patience. */
const SES_IDENTITY_TIMEOUT_MS = 10_000;

export class SesRegistrationError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    /** The identity already exists in the SES account (created outside this project). */
    readonly alreadyExists = false,
  ) {
    super(message);
    this.name = "SesRegistrationError";
  }
}

/**
 * `CreateEmailIdentity` with `DkimSigningAttributes`. The SES account is
 * shared by every project, so an identity that already exists there (409) is
 * never touched: replacing its DKIM key would take over, or break, a domain
 * someone else set up. That is refused (`alreadyExists`).
 */
export async function registerDomainWithSes(env: SesEnv, domain: string, selector: string, privateKeyPkcs8Base64: string): Promise<void> {
  const ses = sesApi(env);
  if (!ses) throw new SesRegistrationError(SES_NOT_CONFIGURED);
  const { client, baseUrl: base } = ses;
  const signing = { DomainSigningSelector: selector, DomainSigningPrivateKey: privateKeyPkcs8Base64 };
  const created = await client.fetch(`${base}/v2/email/identities`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ EmailIdentity: domain, DkimSigningAttributes: signing }),
    signal: AbortSignal.timeout(SES_IDENTITY_TIMEOUT_MS),
  });
  if (created.ok) return;
  if (created.status === 409) {
    await created.body?.cancel();
    throw new SesRegistrationError(`The identity ${domain} already exists in the SES account`, 409, true);
  }
  throw new SesRegistrationError(`SES CreateEmailIdentity failed: ${await sesErrorMessage(created)}`, created.status);
}

/** `DeleteEmailIdentity`: the identity is gone afterwards (also when SES did not know it). */
export async function deleteDomainFromSes(env: SesEnv, domain: string): Promise<void> {
  const ses = sesApi(env);
  if (!ses) throw new SesRegistrationError(SES_NOT_CONFIGURED);
  const response = await ses.client.fetch(`${ses.baseUrl}/v2/email/identities/${encodeURIComponent(domain)}`, {
    method: "DELETE",
    signal: AbortSignal.timeout(SES_IDENTITY_TIMEOUT_MS),
  });
  if (response.ok || response.status === 404) {
    await response.body?.cancel();
    return;
  }
  throw new SesRegistrationError(`SES DeleteEmailIdentity failed: ${await sesErrorMessage(response)}`, response.status);
}
