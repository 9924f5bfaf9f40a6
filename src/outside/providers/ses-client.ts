import { AwsClient } from "aws4fetch";
import type { Env } from "../../env";
import { readConfig } from "../../lib/config";

/** The SES v2 HTTP API as this deployment reaches it: SigV4 signing by aws4fetch. */
export type SesEnv = Pick<Env, "SES_ENDPOINT" | "SES_REGION" | "SES_ACCESS_KEY_ID" | "SES_SECRET_ACCESS_KEY">;

export const SES_NOT_CONFIGURED = "SES is not configured: set the SES_ACCESS_KEY_ID and SES_SECRET_ACCESS_KEY secrets (wrangler secret put)";

export interface SesApi {
  client: AwsClient;
  /** e.g. https://email.us-east-1.amazonaws.com, or SES_ENDPOINT (tests, local fakes). */
  baseUrl: string;
}

/** The signed client and base URL, or null when the credentials are not set. */
export function sesApi(env: SesEnv): SesApi | null {
  if (!env.SES_ACCESS_KEY_ID || !env.SES_SECRET_ACCESS_KEY) return null;
  const { SES_REGION: region, SES_ENDPOINT: endpoint } = readConfig(env);
  return {
    client: new AwsClient({
      accessKeyId: env.SES_ACCESS_KEY_ID,
      secretAccessKey: env.SES_SECRET_ACCESS_KEY,
      region,
      service: "ses",
      // Retries are the queue's job (with back-off), not the HTTP client's.
      retries: 0,
    }),
    baseUrl: endpoint ?? `https://email.${region}.amazonaws.com`,
  };
}

/** "SES <status> <ErrorType>: <message>" from an SES error response. */
export async function sesErrorMessage(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  let message = text.slice(0, 200) || `HTTP ${response.status}`;
  try {
    const body = JSON.parse(text) as { message?: string; Message?: string };
    message = body.message ?? body.Message ?? message;
  } catch {
    // not JSON: keep the text
  }
  const errorType = sesErrorType(response);
  return `SES ${response.status}${errorType ? ` ${errorType}` : ""}: ${message}`;
}

/** The AWS error type (e.g. TooManyRequestsException) from the x-amzn-ErrorType header. */
export const sesErrorType = (response: Response): string => response.headers.get("x-amzn-ErrorType")?.split(":")[0] ?? "";
