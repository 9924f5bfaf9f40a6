import certPem from "../fixtures/sns/sns-test-cert.pem?raw";
import keyPem from "../fixtures/sns/sns-test-key.pem?raw";

/**
 * A fake Amazon SNS: signs HTTP(S) notifications with a test key (whose
 * certificate it serves at CERT_URL), written from AWS's documentation of the
 * string to sign, independent of the Worker's own verification code.
 * https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html
 */
export const CERT_URL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem";
/** The topic vitest.config.ts allows in SES_SNS_TOPIC_ARNS. */
export const TOPIC = "arn:aws:sns:us-east-1:123456789012:ses-feedback";
export { certPem };

export type Sns = Record<string, string>;

function pemBody(pem: string, label: string): Uint8Array {
  const b64 = pem.split(`-----BEGIN ${label}-----`)[1].split(`-----END ${label}-----`)[0].replace(/\s+/g, "");
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

const keys = new Map<string, Promise<CryptoKey>>();
function signingKey(hash: "SHA-1" | "SHA-256") {
  if (!keys.has(hash)) {
    keys.set(hash, crypto.subtle.importKey("pkcs8", pemBody(keyPem, "PRIVATE KEY"), { name: "RSASSA-PKCS1-v1_5", hash }, false, ["sign"]));
  }
  return keys.get(hash)!;
}

/** The string to sign, written out here from AWS's documentation (independent of the Worker's code). */
function canonical(m: Sns): string {
  const names =
    m.Type === "Notification"
      ? ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
      : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"];
  return names
    .filter((n) => m[n] !== undefined)
    .map((n) => `${n}\n${m[n]}\n`)
    .join("");
}

/** Signs a message as SNS does (SignatureVersion 2 = SHA256withRSA, 1 = SHA1withRSA). */
export async function sign(fields: Sns, options: { version?: "1" | "2"; certUrl?: string; hash?: "SHA-1" | "SHA-256" } = {}): Promise<Sns> {
  const version = options.version ?? "2";
  const m: Sns = { ...fields, SignatureVersion: version, SigningCertURL: options.certUrl ?? CERT_URL };
  const hash = options.hash ?? (version === "1" ? "SHA-1" : "SHA-256");
  const signature = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", await signingKey(hash), new TextEncoder().encode(canonical(m)));
  m.Signature = btoa(String.fromCharCode(...new Uint8Array(signature)));
  return m;
}

/** An SNS Notification carrying an SES event (or any Message). */
export function notification(ses: unknown, extra: Partial<Sns> = {}): Sns {
  return {
    Type: "Notification",
    MessageId: crypto.randomUUID(),
    TopicArn: TOPIC,
    Message: JSON.stringify(ses),
    Timestamp: new Date().toISOString(),
    ...extra,
  };
}

/** SES's permanent bounce event for one message id and recipient, as SES event publishing sends it. */
export function sesBounce(messageId: string, to: string) {
  return {
    eventType: "Bounce",
    mail: { timestamp: new Date().toISOString(), messageId, source: "sender@example.com", destination: [to] },
    bounce: {
      bounceType: "Permanent",
      bounceSubType: "General",
      bouncedRecipients: [{ emailAddress: to, action: "failed", status: "5.1.1", diagnosticCode: "smtp; 550 5.1.1 user unknown" }],
      timestamp: new Date().toISOString(),
      feedbackId: `fb-${crypto.randomUUID()}`,
    },
  };
}

/** Serves the signing certificate (the only thing the Worker fetches from SNS for notifications). */
export function snsHandler(request: Request): Response | undefined {
  if (request.url === CERT_URL) return new Response(certPem);
  return undefined;
}

/**
 * An SES event-publishing event (through a configuration set) for a message the fake SES accepted: its
 * MessageId and the EmailTags it was sent with (`mail.tags`, name -> [value]), as SES hands them back.
 */
export function sesEvent(
  eventType: "Send" | "Delivery" | "Bounce" | "Complaint",
  call: { messageId: string; to: string[]; tags: Record<string, string> },
  bounce?: { recipients: string[]; type?: "Permanent" | "Transient" },
) {
  const timestamp = new Date().toISOString();
  const mail = {
    timestamp,
    messageId: call.messageId,
    source: "sender@example.com",
    destination: call.to,
    tags: Object.fromEntries(Object.entries(call.tags).map(([name, value]) => [name, [value]])),
  };
  if (eventType === "Send") return { eventType, mail, send: {} };
  if (eventType === "Delivery") return { eventType, mail, delivery: { timestamp, recipients: call.to, smtpResponse: "250 ok" } };
  if (eventType === "Complaint") {
    return {
      eventType,
      mail,
      complaint: { complainedRecipients: call.to.map((emailAddress) => ({ emailAddress })), timestamp, feedbackId: `fb-${crypto.randomUUID()}` },
    };
  }
  return {
    eventType,
    mail,
    bounce: {
      bounceType: bounce?.type ?? "Permanent",
      bounceSubType: "General",
      bouncedRecipients: (bounce?.recipients ?? call.to).map((emailAddress) => ({
        emailAddress,
        action: "failed",
        status: "5.1.1",
        diagnosticCode: `smtp; 550 5.1.1 <${emailAddress}> user unknown`,
      })),
      timestamp,
      feedbackId: `fb-${crypto.randomUUID()}`,
    },
  };
}
