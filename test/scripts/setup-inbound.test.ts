import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { setupInbound } from "../../scripts/setup-inbound.mjs";

/**
 * The inbound step of `npm run setup:cloudflare` (scripts/setup-inbound.mjs) against a fake
 * Cloudflare REST API (zones, Email Routing settings, rules, the catch-all) at its HTTP boundary.
 */
interface Rule {
  id: string;
  name?: string;
  enabled: boolean;
  matchers: { type: string; field?: string; value?: string }[];
  actions: { type: string; value?: string[] }[];
}

function fakeCloudflare(initial: { zones?: { id: string; name: string }[]; enabled?: boolean; subaddress?: boolean; rules?: Rule[]; token?: string } = {}) {
  const state = {
    zones: initial.zones ?? [{ id: "zone1", name: "example.com" }],
    routing: { enabled: initial.enabled ?? false, support_subaddress: initial.subaddress ?? false, dnsEnabled: [] as string[] },
    rules: initial.rules ?? [],
    catchAll: { enabled: true, matchers: [{ type: "all" }], actions: [{ type: "drop" }] } as Omit<Rule, "id">,
    writes: [] as string[],
  };
  const ok = (result: unknown) => Response.json({ success: true, errors: [], result });
  const refused = (status: number, message: string) => Response.json({ success: false, errors: [{ code: 10000, message }] }, { status });
  async function fetchImpl(url: string, init: RequestInit) {
    const { pathname, searchParams } = new URL(url);
    const path = pathname.replace(/^\/client\/v4/, "");
    if (init.headers && (init.headers as Record<string, string>).Authorization !== `Bearer ${initial.token ?? "good-token"}`)
      return refused(403, "Authentication error");
    const body = init.body ? JSON.parse(String(init.body)) : undefined;
    const method = init.method ?? "GET";
    if (method !== "GET") state.writes.push(`${method} ${path}`);
    if (method === "GET" && path === "/zones") return ok(state.zones.filter((z) => z.name === searchParams.get("name")));
    const zone = /^\/zones\/([^/]+)\/email\/routing(.*)$/.exec(path);
    if (!zone || !state.zones.some((z) => z.id === zone[1])) return refused(404, "not found");
    const rest = zone[2];
    if (method === "GET" && rest === "")
      return ok({ name: "example.com", enabled: state.routing.enabled, support_subaddress: state.routing.support_subaddress });
    if (method === "POST" && rest === "/dns") {
      state.routing.dnsEnabled.push(body.name);
      if (body.name === "example.com") state.routing.enabled = true;
      return ok({ enabled: true, name: body.name });
    }
    if (method === "PATCH" && rest === "") {
      state.routing.support_subaddress = body.support_subaddress;
      return ok({});
    }
    if (method === "GET" && rest === "/rules") return ok(state.rules);
    if (method === "POST" && rest === "/rules") {
      state.rules.push({ id: `rule${state.rules.length + 1}`, ...body });
      return ok(state.rules.at(-1));
    }
    if (method === "GET" && rest === "/rules/catch_all") return ok(state.catchAll);
    if (method === "PUT" && rest === "/rules/catch_all") {
      state.catchAll = body;
      return ok(body);
    }
    return refused(405, `${method} ${path}`);
  }
  return { state, fetchImpl };
}

const run = (cf: ReturnType<typeof fakeCloudflare>, over: Record<string, unknown> = {}): Promise<string[]> => {
  const lines: string[] = [];
  return setupInbound({
    domain: "in.example.com",
    worker: "edge-mail",
    token: "good-token",
    apiBase: "https://api.test/client/v4",
    fetchImpl: cf.fetchImpl,
    log: (line: string) => lines.push(line),
    ...over,
  }).then(() => lines);
};

describe("npm run setup:cloudflare, receiving mail", () => {
  it("turns Email Routing and subaddressing on for INBOUND_DOMAIN and adds r@ > Worker; a second run changes nothing", async () => {
    const cf = fakeCloudflare();
    const first = await run(cf);
    expect(cf.state.routing.dnsEnabled).toEqual(["in.example.com"]);
    expect(cf.state.routing.support_subaddress).toBe(true);
    expect(cf.state.rules.map((r) => [r.matchers[0].value, r.actions[0]])).toEqual([["r@in.example.com", { type: "worker", value: ["edge-mail"] }]]);
    expect(first.join("\n")).toContain("in the zone example.com");
    // Without --inbound-catch-all the catch-all is left alone, and the output says what named addresses need.
    expect(cf.state.catchAll.actions).toEqual([{ type: "drop" }]);
    expect(first.join("\n")).toContain("--inbound-catch-all");

    const writes = cf.state.writes.length;
    const second = await run(cf);
    // Only the subdomain's enable is repeated (its state cannot be read back); the rules and settings stay.
    expect(cf.state.writes.slice(writes)).toEqual(["POST /zones/zone1/email/routing/dns"]);
    expect(cf.state.rules).toHaveLength(1);
    expect(second.join("\n")).toMatch(/✓ inbound: rule r@in\.example\.com > Worker edge-mail/);
  });

  it("--inbound-catch-all makes the zone's catch-all Send to a Worker (the REST API; wrangler refuses it)", async () => {
    const cf = fakeCloudflare({ enabled: true, subaddress: true });
    await run(cf, { catchAll: true });
    expect(cf.state.catchAll).toMatchObject({ enabled: true, matchers: [{ type: "all" }], actions: [{ type: "worker", value: ["edge-mail"] }] });
  });

  it("--dry-run writes nothing and says what it would change; a rule of another action is left as it is", async () => {
    const other: Rule = {
      id: "mine",
      enabled: true,
      matchers: [{ type: "literal", field: "to", value: "r@in.example.com" }],
      actions: [{ type: "forward", value: ["ops@example.com"] }],
    };
    const cf = fakeCloudflare({ rules: [other] });
    const lines = await run(cf, { dryRun: true, catchAll: true });
    expect(cf.state.writes).toEqual([]);
    expect(lines.filter((l) => l.startsWith("~"))).toHaveLength(3); // routing on, subaddressing, the catch-all (r@ is left as it is)
    expect(lines.join("\n")).toContain("a rule for r@in.example.com exists with another action");
  });

  it("without a token, a refused token, or no zone: prints the steps to do by hand and writes nothing; without INBOUND_DOMAIN nothing at all", async () => {
    const cf = fakeCloudflare();
    const noToken = await run(cf, { token: undefined });
    expect(noToken.filter((l) => l.startsWith("!"))).toHaveLength(3);
    expect(noToken.join("\n")).toContain("r@in.example.com > Send to a Worker > edge-mail");

    const refused = await run(cf, { token: "wrong" });
    expect(refused.join("\n")).toContain("cannot list zones with this token");

    const noZone = await run(fakeCloudflare({ zones: [] }));
    expect(noZone.join("\n")).toContain("no zone of in.example.com");
    expect(cf.state.writes).toEqual([]);

    const off = await run(cf, { domain: undefined });
    expect(off).toEqual([expect.stringContaining("INBOUND_DOMAIN is not set")]);
  });
});
