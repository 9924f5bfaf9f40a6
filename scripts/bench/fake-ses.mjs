// A local stand-in for Amazon SES v2 at its HTTP boundary, for the bench and the fault tests
// (test/faults): it answers SendEmail (POST /v2/email/outbound-emails) as SES does,
// {"MessageId": ...}, after `latencyMs`, and refuses requests without a SigV4 Authorization
// header or raw content. It keeps what it accepted by the email id the Worker tags each
// message with (EmailTags em_email), and can play a provider fault (setFault): throttling
// (429 TooManyRequestsException), refusing (400 MessageRejected) or hanging (the message is
// taken, the answer held). With `sns`, it also plays SES event publishing through SNS: for each
// accepted message a Delivery event carrying the message's tags, signed as SNS signs
// (SignatureVersion 2), posted to <target>/webhooks/ses and retried until the Worker answers 2xx
// (SNS retries too); the signing certificate is served at its path on this server (the Worker's
// SNS_DEV_CERT_ORIGIN, development only).
import { createSign, randomUUID } from "node:crypto";
import { createServer } from "node:http";

export const SNS_CERT_PATH = "/SimpleNotificationService-faults.pem";
export const SNS_CERT_URL = `https://sns.us-east-1.amazonaws.com${SNS_CERT_PATH}`;
export const SNS_TOPIC = "arn:aws:sns:us-east-1:123456789012:ses-feedback";

/** The string SNS signs for a Notification (AWS's documented field order). */
function canonical(m) {
  return ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
    .filter((n) => m[n] !== undefined)
    .map((n) => `${n}\n${m[n]}\n`)
    .join("");
}

export function startFakeSes({ latencyMs = 30, port = 0, sns } = {}) {
  const counts = { sent: 0, refused: 0, throttled: 0, hung: 0, inFlight: 0, maxInFlight: 0 };
  /** email id -> SES message ids it accepted for it (more than one: the email was sent twice). */
  const accepted = new Map();
  /** email id -> how many definite refusals (400) it got. */
  const refused = new Map();
  /** message id -> { emailId, to, tags } */
  const messages = new Map();
  /** Provider faults in force: each {kind, until, match?, holdMs?}; the first one that matches a recipient applies. */
  let faults = [];
  let target = sns?.target ?? null;
  const notifications = { pending: 0, posted: 0, attempts: 0 };
  const held = new Set();

  const faultFor = (to) => faults.find((f) => Date.now() < f.until && (!f.match || f.match.test(to))) ?? null;

  function notify(messageId) {
    if (!sns) return;
    const message = messages.get(messageId);
    const timestamp = new Date().toISOString();
    const event = {
      eventType: "Delivery",
      mail: {
        timestamp,
        messageId,
        source: message.from,
        destination: [message.to],
        tags: Object.fromEntries(Object.entries(message.tags).map(([k, v]) => [k, [v]])),
      },
      delivery: { timestamp, recipients: [message.to], smtpResponse: "250 2.0.0 OK" },
    };
    notifications.pending++;
    const post = async () => {
      notifications.attempts++;
      const m = {
        Type: "Notification",
        MessageId: randomUUID(),
        TopicArn: SNS_TOPIC,
        Message: JSON.stringify(event),
        Timestamp: new Date().toISOString(),
        SignatureVersion: "2",
        SigningCertURL: SNS_CERT_URL,
      };
      m.Signature = createSign("RSA-SHA256").update(canonical(m)).sign(sns.keyPem, "base64");
      try {
        if (!target) throw new Error("no target yet");
        const res = await fetch(`${target}/webhooks/ses`, {
          method: "POST",
          headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
          body: JSON.stringify(m),
          signal: AbortSignal.timeout(30_000),
        });
        await res.text();
        if (!res.ok) throw new Error(`answered ${res.status}`);
        notifications.pending--;
        notifications.posted++;
      } catch {
        // As SNS does: again a little later (the Worker may be down or restarting).
        setTimeout(() => enqueuePost(post), 2_000);
      }
    };
    setTimeout(() => enqueuePost(post), sns.delayMs ?? 200);
  }

  // At most a few notifications in flight, so they do not swamp the Worker.
  const postQueue = [];
  let posting = 0;
  function enqueuePost(post) {
    postQueue.push(post);
    pump();
  }
  function pump() {
    while (posting < (sns?.concurrency ?? 4) && postQueue.length > 0) {
      const post = postQueue.shift();
      posting++;
      post().finally(() => {
        posting--;
        pump();
      });
    }
  }

  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const answer = (status, body, headers = {}) => {
        if (res.destroyed) return;
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      };
      if (sns && req.method === "GET" && req.url === SNS_CERT_PATH) {
        res.writeHead(200, { "content-type": "application/x-pem-file" });
        return res.end(sns.certPem);
      }
      if (req.method !== "POST" || req.url !== "/v2/email/outbound-emails") return answer(404, { message: `no ${req.method} ${req.url} here` });
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        body = null;
      }
      if (
        !/^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/ses\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.test(
          req.headers.authorization ?? "",
        )
      ) {
        counts.refused++;
        return answer(403, { message: "missing or malformed SigV4 signature" }, { "x-amzn-ErrorType": "AccessDeniedException" });
      }
      if (typeof body?.Content?.Raw?.Data !== "string" || body.Content.Raw.Data.length === 0) {
        counts.refused++;
        return answer(400, { message: "Content.Raw.Data is required" }, { "x-amzn-ErrorType": "BadRequestException" });
      }
      const tags = Object.fromEntries((body.EmailTags ?? []).map((t) => [t.Name, t.Value]));
      const emailId = tags.em_email ?? `untagged-${randomUUID()}`;
      const to = body.Destination?.ToAddresses?.[0] ?? "";
      const now = faultFor(to);
      if (now?.kind === "throttle") {
        counts.throttled++;
        return answer(429, { message: "Maximum sending rate exceeded." }, { "x-amzn-ErrorType": "TooManyRequestsException" });
      }
      if (now?.kind === "refuse") {
        counts.refused++;
        refused.set(emailId, (refused.get(emailId) ?? 0) + 1);
        return answer(400, { message: "Email address is not verified." }, { "x-amzn-ErrorType": "MessageRejected" });
      }
      const take = () => {
        const messageId = `0100${randomUUID().replace(/-/g, "")}-000000`;
        messages.set(messageId, { emailId, to, from: body.FromEmailAddress, tags });
        accepted.set(emailId, [...(accepted.get(emailId) ?? []), messageId]);
        counts.sent++;
        notify(messageId);
        return messageId;
      };
      if (now?.kind === "hang") {
        // SES has the message; the answer comes after `holdMs` (the Worker has given up by then).
        counts.hung++;
        const messageId = take();
        const timer = setTimeout(() => {
          held.delete(timer);
          answer(200, { MessageId: messageId });
        }, now.holdMs ?? 60_000);
        held.add(timer);
        return;
      }
      counts.inFlight++;
      counts.maxInFlight = Math.max(counts.maxInFlight, counts.inFlight);
      setTimeout(() => {
        counts.inFlight--;
        answer(200, { MessageId: take() });
      }, latencyMs);
    });
  });
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address();
      resolve({
        url: `http://127.0.0.1:${bound}`,
        counts,
        accepted,
        refused,
        messages,
        notifications,
        /** Where SNS notifications go (the Worker's base URL; it may change on a restart). */
        setTarget(url) {
          target = url;
        },
        /**
         * A provider fault for `ms`, in place of any other: "throttle" (429), "refuse" (400) or "hang" (the
         * answer held `holdMs`); `match` limits it to recipients it matches. null: no fault.
         */
        setFault(kind, ms, extra = {}) {
          faults = kind ? [{ kind, until: Date.now() + ms, ...extra }] : [];
        },
        /** One more fault beside those in force (give each a `match`, so they apply to different recipients). */
        addFault(kind, ms, extra = {}) {
          faults.push({ kind, until: Date.now() + ms, ...extra });
        },
        close: () =>
          new Promise((r) => {
            for (const timer of held) clearTimeout(timer);
            server.closeAllConnections?.();
            server.close(r);
          }),
      });
    });
  });
}
