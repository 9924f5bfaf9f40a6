import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { verifiedDomain } from "../sending";
import { eventually, receiver, webhookProject } from "./harness";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";

/** The events an endpoint received, verified with its secret, in order. */
const received = (calls: { url: string; body: string; headers: Record<string, string> }[], secret: string, url = URL_) =>
  calls.filter((c) => c.url === url).map((c) => new Webhook(secret).verify(c.body, c.headers) as { type: string; timestamp: string; data: any });

describe("events recorded where the state changes, delivered through the real queue", () => {
  it("domain.verified when a check verifies a domain", async () => {
    const { calls, dns } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["domain.verified", "domain.failed"] });
    const name = await verifiedDomain(p, dns);
    const [event] = await eventually(async () => {
      const events = received(calls, hook.secret);
      expect(events).toHaveLength(1);
      return events;
    });
    expect(event).toMatchObject({ type: "domain.verified", data: { domain: name, status: "VERIFIED", verifiedAt: expect.any(String) } });
    // Checking again changes nothing: no second event.
    const list = await p.api.get("/domains");
    await p.api.post(`/domains/${list.body.data.items[0].id}/verify`);
    await new Promise((r) => setTimeout(r, 1500));
    expect(received(calls, hook.secret)).toHaveLength(1);
  });
});
