import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/lib/config";

describe("readConfig", () => {
  it("gives every setting its default when nothing is set", () => {
    expect(readConfig({})).toMatchObject({
      ENVIRONMENT: "production",
      development: false,
      RATE_LIMIT_PER_MINUTE: 1000,
      SEND_RATE_PER_SECOND: 14,
      EMAIL_PROVIDER: "ses",
      SES_REGION: "us-east-1",
      SES_TIMEOUT_MS: 30_000,
      SES_SNS_TOPIC_ARNS: [],
      DOH_URL: "https://cloudflare-dns.com/dns-query",
      DOH_TIMEOUT_MS: 3000,
      EMAIL_HTML_RETENTION_DAYS: 30,
      EVENT_RETENTION_DAYS: 365,
      QUOTA_CONTACTS: 1_000_000,
      QUOTA_EVENTS_PER_DAY: 1_000_000,
      QUOTA_EMAILS_PER_DAY: 100_000,
      QUOTA_DOMAINS: 50,
      QUOTA_STORED_BYTES: 5 * 1024 * 1024 * 1024,
      BENCH_COUNT_D1: false,
    });
    expect(readConfig({}).PUBLIC_URL).toBeUndefined();
  });

  it("a number that is not a positive number takes the default; quotas are floored, the SES timeout capped", () => {
    const config = readConfig({
      RATE_LIMIT_PER_MINUTE: "abc",
      SEND_RATE_PER_SECOND: "-5",
      QUOTA_DOMAINS: "7.9",
      SES_TIMEOUT_MS: "999999",
      DOH_TIMEOUT_MS: "0",
    });
    expect(config.RATE_LIMIT_PER_MINUTE).toBe(1000);
    expect(config.SEND_RATE_PER_SECOND).toBe(14);
    expect(config.QUOTA_DOMAINS).toBe(7);
    expect(config.SES_TIMEOUT_MS).toBe(120_000);
    expect(config.DOH_TIMEOUT_MS).toBe(3000);
  });

  it("text settings are trimmed; lists are split; URLs lose their trailing slash", () => {
    const config = readConfig({
      ENVIRONMENT: " development ",
      SES_REGION: "EU-West-1",
      SES_SNS_TOPIC_ARNS: " arn:a , ,arn:b ",
      PUBLIC_URL: "https://mail.example.com//",
      SES_ENDPOINT: "http://127.0.0.1:9000/",
      BENCH_COUNT_D1: "1",
    });
    expect(config).toMatchObject({
      development: true,
      SES_REGION: "eu-west-1",
      SES_SNS_TOPIC_ARNS: ["arn:a", "arn:b"],
      PUBLIC_URL: "https://mail.example.com",
      SES_ENDPOINT: "http://127.0.0.1:9000",
      BENCH_COUNT_D1: true,
    });
  });

  it("parses an env object once and answers the same settings for it after", () => {
    expect(readConfig(env)).toBe(readConfig(env));
    expect(readConfig(env).PUBLIC_URL).toBe("http://edge-mail.test");
    expect(readConfig({ ...env, PUBLIC_URL: "https://other.test" }).PUBLIC_URL).toBe("https://other.test");
  });
});

describe("EMAIL_PROVIDER=capture outside development is a configuration error", () => {
  it.each([["production"], ["test"], ["staging"], [undefined]])("ENVIRONMENT=%s with capture is refused with a message naming the setting", (environment) => {
    expect(() => readConfig({ ENVIRONMENT: environment, EMAIL_PROVIDER: "capture" })).toThrow(/EMAIL_PROVIDER=capture.*ENVIRONMENT=development/);
  });

  it("development with capture, and every environment with ses, are accepted", () => {
    expect(readConfig({ ENVIRONMENT: "development", EMAIL_PROVIDER: "capture" }).EMAIL_PROVIDER).toBe("capture");
    expect(readConfig({ ENVIRONMENT: "production", EMAIL_PROVIDER: "ses" }).EMAIL_PROVIDER).toBe("ses");
  });
});
