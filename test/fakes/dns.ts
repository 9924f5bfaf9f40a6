import { vi } from "vitest";

/**
 * A fake DNS-over-HTTPS server at the HTTP boundary: it answers the Worker's
 * `fetch` to DOH_URL in the JSON format Cloudflare and Google serve
 * (`{Status, Answer: [{name, type, TTL, data}]}`; TXT data are quoted
 * character-strings split at 255 characters; MX data "10 host."), with
 * NXDOMAIN for names without records, CNAME chains followed as a recursive
 * resolver does (the CNAME records first in Answer, then the records of the
 * chain's end), and SERVFAIL or a slow answer (that honours the request's
 * AbortSignal) on demand. Other URLs go to `other`.
 */
export const DOH_URL = "https://doh.test/dns-query";
const TYPES: Record<string, number> = { A: 1, CNAME: 5, MX: 15, TXT: 16, AAAA: 28 };
type RType = "A" | "AAAA" | "MX" | "TXT";

export function quoteTxt(value: string): string {
  const chunks = value.match(/.{1,255}/gs) ?? [""];
  return chunks.map((c) => `"${c.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(" ");
}

export function fakeDns(other?: (request: Request) => Promise<Response> | Response) {
  const zone = new Map<string, Map<RType, string[]>>();
  /** name -> CNAME target. */
  const aliases = new Map<string, string>();
  const failing = new Map<string, "SERVFAIL" | "SLOW">();
  const requests: { name: string; type: string }[] = [];
  /** Slow lookups the Worker gave up on, with the abort reason (e.g. TimeoutError). */
  const aborted: { name: string; type: string; reason: string }[] = [];

  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(String(input), init);
    const url = new URL(request.url);
    if (!request.url.startsWith(DOH_URL)) {
      if (other) return other(request);
      throw new TypeError(`unexpected fetch to ${request.url}`);
    }
    const name = (url.searchParams.get("name") ?? "").toLowerCase().replace(/\.$/, "");
    const type = url.searchParams.get("type") ?? "A";
    requests.push({ name, type });
    if (request.headers.get("accept") !== "application/dns-json") return new Response("bad accept", { status: 415 });
    const mode = failing.get(name);
    if (mode === "SLOW") {
      // Never answers: only the caller's AbortSignal ends the wait (recorded in `aborted`).
      const signal = init?.signal ?? request.signal;
      await new Promise<never>((_, reject) => {
        const timer = setTimeout(() => reject(new Error("fake resolver gave up")), 10_000);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          aborted.push({ name, type, reason: (signal.reason as Error | undefined)?.name ?? String(signal.reason) });
          reject(signal.reason);
        });
      });
    }
    const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { "content-type": "application/dns-json" } });
    const question = [{ name: `${name}.`, type: TYPES[type] }];
    if (mode === "SERVFAIL") return json({ Status: 2, TC: false, RD: true, RA: true, Question: question });
    // A recursive resolver follows CNAMEs: the chain comes first in Answer, then the records of its end.
    const chain: { name: string; type: number; TTL: number; data: string }[] = [];
    let owner = name;
    while (aliases.has(owner) && type !== "CNAME" && chain.length < 8) {
      const target = aliases.get(owner)!;
      chain.push({ name: `${owner}.`, type: TYPES.CNAME, TTL: 300, data: `${target}.` });
      owner = target;
    }
    // A CNAME question about an alias is answered with the CNAME itself (as a resolver does).
    if (type === "CNAME" && aliases.has(name)) {
      return json({
        Status: 0,
        TC: false,
        RD: true,
        RA: true,
        Question: question,
        Answer: [{ name: `${name}.`, type: TYPES.CNAME, TTL: 300, data: `${aliases.get(name)}.` }],
      });
    }
    const records = zone.get(owner);
    if (!records) {
      return json({
        Status: 3,
        TC: false,
        RD: true,
        RA: true,
        Question: question,
        ...(chain.length ? { Answer: chain } : {}),
        Authority: [{ name: "test.", type: 6, TTL: 900, data: "ns.test. admin.test. 1 7200 900 1209600 86400" }],
      });
    }
    const values = records.get(type as RType) ?? [];
    const answers = [...chain, ...values.map((v) => ({ name: `${owner}.`, type: TYPES[type], TTL: 300, data: type === "TXT" ? quoteTxt(v) : v }))];
    return json({
      Status: 0,
      TC: false,
      RD: true,
      RA: true,
      AD: false,
      CD: false,
      Question: question,
      ...(answers.length ? { Answer: answers } : {}),
    });
  });

  const api = {
    spy,
    requests,
    aborted,
    /** Sets (replaces) the records of one type at a name; [] keeps the name existing without records. */
    set(name: string, type: RType, values: string[]) {
      const key = name.toLowerCase();
      if (!zone.has(key)) zone.set(key, new Map());
      zone.get(key)!.set(type, values);
      return api;
    },
    /** Makes `name` a CNAME to `target` (its own records are then hidden, as DNS requires). */
    cname(name: string, target: string) {
      aliases.set(name.toLowerCase(), target.toLowerCase());
      return api;
    },
    /** The name exists (NOERROR) but has no records. */
    exists(name: string) {
      if (!zone.has(name)) zone.set(name, new Map());
      return api;
    },
    remove(name: string, type?: RType) {
      if (type) zone.get(name)?.delete(type);
      else zone.delete(name);
      return api;
    },
    servfail(name: string) {
      failing.set(name, "SERVFAIL");
      return api;
    },
    slow(name: string) {
      failing.set(name, "SLOW");
      return api;
    },
    heal(name: string) {
      failing.delete(name);
      return api;
    },
    count(name: string, type?: string) {
      return requests.filter((r) => r.name === name && (!type || r.type === type)).length;
    },
    /** Publishes exactly what a domain record from the API asks for. */
    publish(records: { type: string; name: string; value: string; priority?: number }[]) {
      for (const r of records) {
        if (r.type === "MX") api.set(r.name, "MX", [`${r.priority ?? 10} ${r.value}.`]);
        else {
          const existing = zone.get(r.name)?.get("TXT") ?? [];
          api.set(r.name, "TXT", [...existing.filter((v) => v !== r.value), r.value]);
        }
      }
      return api;
    },
  };
  return api;
}
