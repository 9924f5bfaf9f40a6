import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

/** Types of the API's schemas, generated from /openapi.json (schema.d.ts). */
export type Schemas = components["schemas"];
export type Condition = Schemas["Condition"];
export type Campaign = Schemas["Campaign"];
export type Contact = Schemas["Contact"];
export type Domain = Schemas["Domain"];
export type Email = Schemas["Email"];
export type EventItem = Schemas["Event"];
export type Segment = Schemas["Segment"];
export type Template = Schemas["Template"];
export type Workflow = Schemas["Workflow"];
export type WorkflowStep = Schemas["WorkflowStep"];
export type WorkflowExecution = Schemas["WorkflowExecution"];
export type CampaignStats = Schemas["CampaignStats"];
export type Webhook = Schemas["Webhook"];
export type WebhookDelivery = Schemas["WebhookDelivery"];

const KEY_ITEM = "edge-mail.secret-key";

/** The secret key lives in this tab's sessionStorage only: closing the tab forgets it. */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY_ITEM),
  signIn: (key: string) => sessionStorage.setItem(KEY_ITEM, key),
  signOut: () => sessionStorage.removeItem(KEY_ITEM),
};

/** Called when the API refuses the key (401): the app goes back to the sign-in form. */
let onUnauthorized: () => void = () => {};
export function whenUnauthorized(handler: () => void) {
  onUnauthorized = handler;
}

const auth: Middleware = {
  onRequest({ request }) {
    const key = session.key();
    if (key) request.headers.set("Authorization", `Bearer ${key}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) onUnauthorized();
    return response;
  },
};

/** The public API, typed by its OpenAPI document: every request carries the signed-in key. */
export const api = createClient<paths>({ baseUrl: location.origin });
api.use(auth);

/** An API error, with the envelope's message (`{success: false, error: {code, message}}`). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Envelope {
  error?: { code?: string; message?: string; errors?: { path?: string; message?: string }[] } | string;
  message?: string;
}

function failure(status: number, body: unknown): ApiFailure {
  const envelope = (body ?? {}) as Envelope;
  const error = typeof envelope.error === "object" ? envelope.error : undefined;
  const details = error?.errors?.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; ");
  const message = error?.message ?? (typeof envelope.error === "string" ? envelope.error : envelope.message) ?? `Request failed (${status})`;
  return new ApiFailure(status, error?.code ?? String(status), details ? `${message} (${details})` : message);
}

/** The data of an openapi-fetch call, or an ApiFailure with the API's message. */
export async function call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await request;
  if (error !== undefined || !response.ok) throw failure(response.status, error);
  return data as T;
}
