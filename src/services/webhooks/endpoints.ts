import { and, eq } from "drizzle-orm";
import { fromRow, type Database } from "../../db/client";
import { webhookDeliveries, webhookEndpoints, type WebhookDelivery, type WebhookEndpoint } from "../../db/schema";
import type { Env } from "../../env";
import { readConfig, requireEncryptionKey } from "../../lib/config";
import { openSecret, sealSecret } from "../../lib/crypto";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { listNewestFirst } from "../../lib/pagination";
import { newWebhookSecret } from "../../lib/standard-webhooks";
import type {
  CreateWebhookRequest,
  DeliveryListQuery,
  UpdateWebhookRequest,
  WebhookDeliveryView,
  WebhookView,
  WebhookWithSecretView,
} from "../../schemas/webhooks";
import { isUniqueViolation } from "../../store/guards";
import { WriteBatch } from "../../store/batch";
import { insertTestDelivery, requeueDelivery } from "../../store/webhooks/deliveries";
import * as store from "../../store/webhooks/endpoints";
import { recordTestEvent } from "../../store/webhooks/events";
import { enqueueDeliveries } from "../../queues";
import { outboundUrlProblem } from "../../outside/outbound-url";
import { webhookUrlKey } from "./url";

/** After a rotation the previous secret keeps signing this long. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** The context a signing secret is sealed for (lib/crypto.ts): a sealed secret moved to another endpoint does not open. */
const secretContext = (webhookId: string) => `webhook-endpoint:${webhookId}`;

/** An endpoint's signing secret, sealed under DKIM_ENCRYPTION_KEY for the endpoint. */
export const sealEndpointSecret = (env: Env, webhookId: string, secret: string) => sealSecret(requireEncryptionKey(env), secretContext(webhookId), secret);
/** A sealed signing secret of the endpoint, opened. */
export const openEndpointSecret = (env: Env, webhookId: string, sealed: string) => openSecret(requireEncryptionKey(env), secretContext(webhookId), sealed);

export function toWebhookView(row: WebhookEndpoint): WebhookView {
  return {
    id: row.id,
    url: row.url,
    events: row.events ?? [],
    description: row.description ?? null,
    enabled: row.enabled,
    disabledReason: row.disabledReason ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function toDeliveryView(row: WebhookDelivery): WebhookDeliveryView {
  return {
    id: row.id,
    webhookId: row.webhookId,
    eventId: row.eventId,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.lastStatusCode ?? null,
    lastError: row.lastError ?? null,
    nextAttemptAt: row.status === "PENDING" && row.nextAttemptAt ? row.nextAttemptAt.toISOString() : null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** 422 naming `url` when the URL may not be called. */
function assertCallableUrl(env: Env, url: string) {
  const problem = outboundUrlProblem(url, env);
  if (problem) throw ApiError.validation([{ field: "url", message: problem, code: "invalid_url" }]);
}

/** 409 naming the project's endpoint that already has this URL (normalised: webhookUrlKey). */
function duplicateUrl(existingId: string): ApiError {
  return new ApiError("CONFLICT", `This project already has an endpoint for this URL (${existingId})`, {
    errors: [{ field: "url", message: `Webhook ${existingId} has this URL`, code: "duplicate_url" }],
    suggestion: `One endpoint per URL: subscribe webhook ${existingId} to more event types (PATCH /webhooks/${existingId} events) instead.`,
  });
}

/**
 * Throws the 409 when another endpoint of the project has this URL. Read in
 * the app (at most the endpoint cap of rows) so keys stored before migration
 * 0024 compare normalised too; the unique index catches a concurrent twin.
 */
async function assertUniqueUrl(env: Env, projectId: string, key: string, self?: string) {
  const { results } = await store.endpointUrls(env.DB, projectId).all<EndpointUrl>();
  const twin = twinOf(results, key, self);
  if (twin) throw duplicateUrl(twin.id);
}

type EndpointUrl = { id: string; url: string; url_key: string | null };

/** Another endpoint with this URL key: the one holding the key first (a duplicate disabled by migration 0024 holds none). */
function twinOf(rows: EndpointUrl[], key: string, self?: string): EndpointUrl | undefined {
  const twins = rows.filter((r) => r.id !== self && webhookUrlKey(r.url) === key);
  return twins.find((r) => r.url_key !== null) ?? twins[0];
}

/** Runs an endpoint write, turning the URL's unique index into the 409. */
async function uniqueUrlWrite<T>(env: Env, projectId: string, key: string, self: string | undefined, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!isUniqueViolation(err, "webhook_endpoints")) throw err;
    await assertUniqueUrl(env, projectId, key, self);
    throw duplicateUrl("another endpoint");
  }
}

const first = <T>(rows: Record<string, unknown>[][], table: Parameters<typeof fromRow>[0]) => (rows[0]?.[0] ? (fromRow(table, rows[0][0]) as T) : null);

export async function createWebhook(env: Env, projectId: string, input: CreateWebhookRequest): Promise<WebhookWithSecretView> {
  assertCallableUrl(env, input.url);
  const urlKey = webhookUrlKey(input.url);
  await assertUniqueUrl(env, projectId, urlKey);
  const id = newId();
  const secret = newWebhookSecret();
  const cap = readConfig(env).WEBHOOK_ENDPOINTS_PER_PROJECT;
  const statement = store.insertEndpoint(
    env.DB,
    {
      id,
      projectId,
      url: input.url,
      urlKey,
      events: input.events ?? [],
      description: input.description ?? null,
      enabled: input.enabled ?? true,
      secretEncrypted: await sealEndpointSecret(env, id, secret),
      at: new Date(),
    },
    cap,
  );
  const row = first<WebhookEndpoint>(
    [(await uniqueUrlWrite(env, projectId, urlKey, undefined, () => statement.all<Record<string, unknown>>())).results],
    webhookEndpoints,
  );
  if (!row) {
    throw new ApiError("QUOTA_EXCEEDED", `This project has reached its limit of ${cap} webhook endpoints`, {
      suggestion: "Delete an endpoint you no longer use, or subscribe one endpoint to several event types.",
    });
  }
  return { ...toWebhookView(row), secret };
}

export async function getWebhook(db: Database, projectId: string, id: string): Promise<WebhookEndpoint> {
  const row = await db.query.webhookEndpoints.findFirst({ where: and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.projectId, projectId)) });
  if (!row) throw ApiError.notFound("Webhook");
  return row;
}

export async function listWebhooks(db: Database, projectId: string, page: { limit: number; cursor?: string }) {
  const result = await listNewestFirst(db, webhookEndpoints, eq(webhookEndpoints.projectId, projectId), page);
  return { ...result, items: result.items.map(toWebhookView) };
}

export async function updateWebhook(env: Env, projectId: string, id: string, input: UpdateWebhookRequest): Promise<WebhookEndpoint> {
  if (input.url !== undefined) assertCallableUrl(env, input.url);
  let urlKey: string | undefined;
  if (input.url !== undefined || input.enabled === true) {
    // A new URL, or enabling: the endpoint takes its URL's key (a duplicate disabled by migration 0024 has none).
    const { results: rows } = await store.endpointUrls(env.DB, projectId).all<EndpointUrl>();
    const current = rows.find((r) => r.id === id);
    if (!current) throw ApiError.notFound("Webhook");
    urlKey = webhookUrlKey(input.url ?? current.url);
    const twin = twinOf(rows, urlKey, id);
    if (twin) throw duplicateUrl(twin.id);
  }
  const statement = store.updateEndpoint(env.DB, projectId, id, { ...input, urlKey }, new Date());
  const { results } = await uniqueUrlWrite(env, projectId, urlKey ?? "", id, () => statement.all<Record<string, unknown>>());
  const row = first<WebhookEndpoint>([results], webhookEndpoints);
  if (!row) throw ApiError.notFound("Webhook");
  return row;
}

export async function deleteWebhook(env: Env, projectId: string, id: string): Promise<void> {
  const { results } = await store.deleteEndpoint(env.DB, projectId, id).all();
  if (results.length === 0) throw ApiError.notFound("Webhook");
}

/** A new secret; the old one keeps signing beside it for 24 hours (two `v1,` signatures). */
export async function rotateWebhookSecret(db: Database, env: Env, projectId: string, id: string): Promise<WebhookWithSecretView> {
  const current = await getWebhook(db, projectId, id);
  const secret = newWebhookSecret();
  const now = new Date();
  const { results } = await store
    .rotateEndpointSecret(
      env.DB,
      projectId,
      id,
      {
        currentEncrypted: await sealEndpointSecret(env, id, secret),
        // The same endpoint id is bound into both ciphertexts: the old one moves as it is.
        previousEncrypted: current.secretEncrypted,
        previousExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
      },
      now,
    )
    .all<Record<string, unknown>>();
  const row = first<WebhookEndpoint>([results], webhookEndpoints);
  if (!row) throw ApiError.notFound("Webhook");
  return { ...toWebhookView(row), secret };
}

export async function listDeliveries(db: Database, projectId: string, webhookId: string, query: DeliveryListQuery) {
  await getWebhook(db, projectId, webhookId);
  const where = and(eq(webhookDeliveries.webhookId, webhookId), query.status ? eq(webhookDeliveries.status, query.status) : undefined);
  const result = await listNewestFirst(db, webhookDeliveries, where, query);
  return { ...result, items: result.items.map(toDeliveryView) };
}

/** Sends a delivery again now (whatever its status); its outcome shows in the delivery log. */
export async function retryDelivery(db: Database, env: Env, projectId: string, webhookId: string, deliveryId: string): Promise<WebhookDeliveryView> {
  const endpoint = await getWebhook(db, projectId, webhookId);
  if (!endpoint.enabled) {
    throw ApiError.invalidState("This webhook is disabled", "Enable it (PATCH /webhooks/{id} with enabled: true) and retry.");
  }
  const { results } = await requeueDelivery(env.DB, projectId, webhookId, deliveryId, new Date()).all<Record<string, unknown>>();
  const row = first<WebhookDelivery>([results], webhookDeliveries);
  if (!row) throw ApiError.notFound("Delivery");
  await enqueueDeliveries(env, [{ deliveryId: row.id, projectId, attempt: row.attempts + 1 }]);
  return toDeliveryView(row);
}

/** Records one `webhook.test` event for this endpoint only and queues its delivery. */
export async function sendTestEvent(db: Database, env: Env, projectId: string, webhookId: string): Promise<WebhookDeliveryView> {
  const endpoint = await getWebhook(db, projectId, webhookId);
  if (!endpoint.enabled) {
    throw ApiError.invalidState("This webhook is disabled", "Enable it (PATCH /webhooks/{id} with enabled: true) first.");
  }
  const at = new Date();
  const eventId = newId();
  const payload = JSON.stringify({
    type: "webhook.test",
    timestamp: at.toISOString(),
    data: { webhookId, message: "A test event from POST /webhooks/{id}/test" },
  });
  const batch = new WriteBatch(env.DB);
  batch.add(recordTestEvent(env.DB, { id: eventId, projectId, payload, at }));
  const delivery = batch.add(insertTestDelivery(env.DB, { eventId, deliveryId: newId(), projectId, webhookId, at }));
  const [inserted] = (await batch.run()).rows(delivery);
  const row = fromRow(webhookDeliveries, inserted) as WebhookDelivery;
  await enqueueDeliveries(env, [{ deliveryId: row.id, projectId, attempt: 1 }]);
  return toDeliveryView(row);
}
