/**
 * Amazon SES "bring your own DKIM" (BYODKIM): registers a domain's own DKIM
 * key with SES so SES signs its mail with the key the owner published.
 * SES v2 HTTP API, signed with SigV4 by aws4fetch.
 */
import { sesApi, sesErrorMessage, SES_NOT_CONFIGURED, type SesEnv } from "../providers/ses-client";

export class SesRegistrationError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "SesRegistrationError";
  }
}

/**
 * `CreateEmailIdentity` with `DkimSigningAttributes`; when the identity
 * already exists in the SES account (409), its key is replaced with
 * `PutEmailIdentityDkimSigningAttributes` instead.
 */
export async function registerDomainWithSes(
  env: SesEnv,
  domain: string,
  selector: string,
  privateKeyPkcs8Base64: string,
): Promise<void> {
  const ses = sesApi(env);
  if (!ses) throw new SesRegistrationError(SES_NOT_CONFIGURED);
  const { client, baseUrl: base } = ses;
  const signing = { DomainSigningSelector: selector, DomainSigningPrivateKey: privateKeyPkcs8Base64 };
  const created = await client.fetch(`${base}/v2/email/identities`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ EmailIdentity: domain, DkimSigningAttributes: signing }),
  });
  if (created.ok) return;
  if (created.status !== 409) {
    throw new SesRegistrationError(`SES CreateEmailIdentity failed: ${await sesErrorMessage(created)}`, created.status);
  }
  await created.body?.cancel();
  const put = await client.fetch(`${base}/v2/email/identities/${encodeURIComponent(domain)}/dkim/signing`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ SigningAttributesOrigin: "EXTERNAL", SigningAttributes: signing }),
  });
  if (!put.ok) {
    throw new SesRegistrationError(`SES PutEmailIdentityDkimSigningAttributes failed: ${await sesErrorMessage(put)}`, put.status);
  }
}
