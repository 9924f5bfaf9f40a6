import { createRoute } from "@hono/zod-openapi";
import * as z from "../lib/zod";
import { getDb } from "../db/client";
import { assertClientWithinLimit } from "../middleware/client-limit";
import { readConfig } from "../lib/config";
import { ApiError } from "../lib/errors";
import { errorResponse, jsonResponse, successEnvelope, success } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { applySesFeedback, sesNotificationProject } from "../services/feedback/ses";
import { routeOf, shardEnv, shardIds } from "../db/shards";
import { projectMovingError } from "../services/shards/moving";
import {
  devCertificateFetcher,
  failedCertificates,
  isSnsUrl,
  parseSnsMessage,
  snsHostForTopic,
  SnsVerificationError,
  verifySnsMessage,
  type SnsMessage,
} from "../outside/sns";

const sesRoute = createRoute({
  method: "post",
  path: "/webhooks/ses",
  operationId: "receiveSesFeedback",
  security: [],
  tags: ["Webhooks"],
  summary: "Amazon SES feedback through Amazon SNS",
  description: [
    "Subscribe this URL (HTTPS) to the SNS topic of an SES configuration set's event destination (or of an identity's Delivery/Bounce/Complaint notifications). Needs no key: only topics listed in `SES_SNS_TOPIC_ARNS` are accepted (while it is empty, every message is refused), and every message's SNS signature is verified (SignatureVersion 1 and 2), with the signing certificate only fetched from https `sns.<region>.amazonaws.com` for the region of the message's TopicArn.",
    "",
    "SNS posts JSON with `Content-Type: text/plain`. A SubscriptionConfirmation is confirmed by fetching its SubscribeURL. Notifications: Send (event publishing) only reconciles an email whose SendEmail call had no answer, found by the message tags it was sent with (`em_email`, `em_project`); Delivery marks the email DELIVERED; a permanent Bounce that names the email's recipient in `bouncedRecipients` marks it BOUNCED, suppresses the address and unsubscribes the contact (`email.bounced`; a bounce naming only other addresses changes nothing); a transient bounce only records `email.bounced`; a Complaint marks it COMPLAINED, suppresses the address and unsubscribes the contact (`email.complained`). Unknown message ids are acknowledged.",
  ].join("\n"),
  request: {
    body: {
      required: true,
      content: { "text/plain": { schema: z.string().openapi({ description: "The SNS message as JSON" }) } },
    },
  },
  responses: {
    200: jsonResponse(successEnvelope(z.object({ type: z.string(), outcome: z.string() })), "Accepted (also for notifications about unknown emails)"),
    400: errorResponse("Body is not JSON or not an SNS message"),
    403: errorResponse("Signature, certificate URL, timestamp or topic not accepted; nothing was changed"),
    503: errorResponse("The signing certificate or SubscribeURL could not be reached; SNS retries"),
  },
});

function toApiError(err: SnsVerificationError): ApiError {
  if (err.kind === "malformed") return new ApiError("BAD_REQUEST", err.message);
  if (err.kind === "unavailable") return new ApiError("SERVICE_UNAVAILABLE", err.message);
  return new ApiError("FORBIDDEN", `SNS message rejected: ${err.message}`);
}

async function confirmSubscription(m: SnsMessage): Promise<void> {
  const url = m.SubscribeURL ? isSnsUrl(m.SubscribeURL) : null;
  if (!url || url.hostname !== snsHostForTopic(m.TopicArn)) {
    throw new ApiError("FORBIDDEN", "SubscribeURL is not an https URL on the SNS host of the TopicArn's region");
  }
  let response: Response;
  try {
    response = await fetch(url.href, { redirect: "manual" });
  } catch (err) {
    throw new ApiError("SERVICE_UNAVAILABLE", `Could not confirm the SNS subscription: ${String(err)}`);
  }
  await response.body?.cancel();
  if (!response.ok) throw new ApiError("SERVICE_UNAVAILABLE", `Confirming the SNS subscription answered ${response.status}`);
}

export const sesFeedbackRouter = createRouter();

// Registered without a body validator: SNS sends JSON as text/plain, read raw here.
sesFeedbackRouter.post("/webhooks/ses", async (c) => {
  const raw = await c.req.text();
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new ApiError("INVALID_JSON", "Request body is not valid JSON", {
      suggestion: "This endpoint takes Amazon SNS HTTP(S) notifications.",
    });
  }
  // Without an allow-list anyone with an AWS account could post validly signed
  // messages from a topic of their own: nothing is accepted until it is set.
  const topics = readConfig(c.env).SES_SNS_TOPIC_ARNS;
  if (topics.length === 0) {
    console.error("POST /webhooks/ses refused: SES_SNS_TOPIC_ARNS is not set");
    throw new ApiError("FORBIDDEN", "SNS message rejected: this deployment accepts no SNS topic (SES_SNS_TOPIC_ARNS is not set)", {
      suggestion: "An operator must set SES_SNS_TOPIC_ARNS to the ARN(s) of the SES feedback topic(s).",
    });
  }
  let message: SnsMessage;
  try {
    message = parseSnsMessage(body);
    // The topic first: a message from a foreign topic never makes this Worker fetch anything.
    if (!topics.includes(message.TopicArn)) {
      throw new ApiError("FORBIDDEN", "SNS message rejected: the topic is not in SES_SNS_TOPIC_ARNS");
    }
    // Only a certificate URL not cached makes this Worker fetch: that is limited per client.
    const devOrigin = readConfig(c.env).development ? c.env.SNS_DEV_CERT_ORIGIN : undefined;
    await verifySnsMessage(message, {
      failed: c.get("caches").get(failedCertificates),
      // Local development only: a fake SNS's certificate (see Env.SNS_DEV_CERT_ORIGIN).
      ...(devOrigin ? { fetcher: devCertificateFetcher(devOrigin) } : {}),
      beforeFetch: () => assertClientWithinLimit(c.env, "sns-certificate", c.req.raw.headers),
    });
  } catch (err) {
    if (err instanceof SnsVerificationError) throw toApiError(err);
    throw err;
  }

  let outcome = "unknown-email";
  if (message.Type === "SubscriptionConfirmation") {
    await confirmSubscription(message);
    outcome = "confirmed";
  } else if (message.Type === "UnsubscribeConfirmation") {
    outcome = "ignored";
  } else {
    // The email's data shard: its project's (the em_project tag SES hands back; a cached route), else each shard in turn.
    const projectId = sesNotificationProject(message.Message);
    const route = projectId ? await routeOf(c.env, projectId) : null;
    // A project moving between shards: 503, and SNS delivers the notification again later (nothing written now could be lost in the copy).
    if (route && route.movingTo !== null) throw projectMovingError();
    const shards = route ? [route.shard] : shardIds(c.env);
    for (const shard of shards) {
      const env = shardEnv(c.env, shard);
      outcome = await applySesFeedback(getDb(env.DB), message.MessageId, message.Message, env, c.get("afterCommit"));
      if (outcome !== "unknown-email") break;
    }
  }
  return c.json(success({ type: message.Type, outcome }), 200);
});

sesFeedbackRouter.openAPIRegistry.registerPath(sesRoute);
