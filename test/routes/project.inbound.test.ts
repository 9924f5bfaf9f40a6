/**
 * PATCH/GET /project inbound: reply tracking by default (off), the deployment's inbound domain and
 * the project's named address on it; without INBOUND_DOMAIN reply tracking cannot be turned on.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { call, expectError, newProject } from "../support/http";

type Inbound = { trackReplies: boolean; domain: string | null; namedAddress: string | null };
type Settings = { data: { inbound: Inbound; trackingMode: string } };

const hexOf = (id: string) => id.replaceAll("-", "");

describe("the project's inbound settings", () => {
  it("GET /project shows reply tracking off, the inbound domain and the project's named address", async () => {
    const project = await newProject();
    const res = await project.api.get<Settings>("/project");
    expect(res.status).toBe(200);
    expect(res.body.data.inbound).toEqual({
      trackReplies: false,
      domain: "in.edge-mail.test",
      namedAddress: `support+${hexOf(project.id)}@in.edge-mail.test`,
    });
    expect(res.body.data.inbound.namedAddress).toMatch(/^support\+[0-9a-f]{32}@in\.edge-mail\.test$/);
  });

  it("PATCH inbound.trackReplies turns it on and off; other settings stay as they were", async () => {
    const project = await newProject();
    await project.api.patch("/project", { trackingMode: "MARKETING_ONLY" });
    const on = await project.api.patch<Settings>("/project", { inbound: { trackReplies: true } });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    expect(on.body.data.inbound.trackReplies).toBe(true);
    expect(on.body.data.trackingMode).toBe("MARKETING_ONLY");
    expect((await project.api.get<Settings>("/project")).body.data.inbound.trackReplies).toBe(true);

    // An empty inbound object changes nothing.
    expect((await project.api.patch<Settings>("/project", { inbound: {} })).body.data.inbound.trackReplies).toBe(true);
    const off = await project.api.patch<Settings>("/project", { inbound: { trackReplies: false } });
    expect(off.body.data.inbound.trackReplies).toBe(false);
  });

  it("refuses what it does not know: a non-boolean, an unknown inbound field (422 naming it); a public key is 403", async () => {
    const project = await newProject();
    const wrongType = expectError(await project.api.patch("/project", { inbound: { trackReplies: "yes" } }), 422, "VALIDATION_ERROR");
    expect(wrongType.errors?.[0]?.field).toBe("inbound.trackReplies");
    const unknown = expectError(await project.api.patch("/project", { inbound: { trackReplies: true, domain: "x.test" } }), 422, "VALIDATION_ERROR");
    expect(JSON.stringify(unknown.errors)).toContain("inbound");
    expectError(await project.publicApi.patch("/project", { inbound: { trackReplies: true } }), 403);
    expect((await project.api.get<Settings>("/project")).body.data.inbound.trackReplies).toBe(false);
  });

  it("without INBOUND_DOMAIN: domain and namedAddress are null, and turning tracking on is a 409 naming INBOUND_DOMAIN that changes nothing", async () => {
    const project = await newProject();
    const noInbound = { ...env, INBOUND_DOMAIN: undefined } as unknown as Env;
    const as = (method: string, path: string, body?: unknown) => call<Settings>(method, path, { key: project.secretKey, body, env: noInbound });

    const shown = await as("GET", "/project");
    expect(shown.body.data.inbound).toEqual({ trackReplies: false, domain: null, namedAddress: null });

    const error = expectError(await as("PATCH", "/project", { inbound: { trackReplies: true } }), 409, "CONFLICT");
    expect(error.message).toContain("INBOUND_DOMAIN");
    expect(error.errors).toEqual([expect.objectContaining({ field: "inbound.trackReplies", code: "inbound_domain_unset" })]);
    expect((await as("GET", "/project")).body.data.inbound.trackReplies).toBe(false);

    // Off is always allowed.
    expect((await as("PATCH", "/project", { inbound: { trackReplies: false } })).status).toBe(200);

    // A send asking for it is refused the same way, before anything is written.
    const send = await call("POST", "/v1/send", {
      key: project.secretKey,
      env: noInbound,
      body: { to: "ada@example.com", from: "hello@example.com", subject: "Hi", body: "<p>Hi</p>", trackReplies: true },
    });
    const sendError = expectError(send, 409, "CONFLICT");
    expect(sendError.errors?.[0]).toMatchObject({ field: "trackReplies", code: "inbound_domain_unset" });
    expect(sendError.message).toContain("INBOUND_DOMAIN");
  });
});
