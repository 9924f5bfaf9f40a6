import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  AllShardsFullError,
  chooseShard,
  controlDb,
  dbFor,
  forgetRoute,
  placeProject,
  SHARD_CACHE_TTL_MS,
  shardDb,
  shardEnv,
  shardIds,
} from "../../src/db/shards";
import type { Env } from "../../src/env";
import { runScheduledJobs } from "../../src/scheduled";
import { runReputationCheck } from "../../src/services/reputation";
import { linkId, openPixelUrl, unsubscribeUrl } from "../../src/services/tracking/links";
import { SEND_QUEUE } from "../../src/messages";
import { insertSentEmail } from "../support/emails";
import { BASE, call, newProject } from "../support/http";
import { runConsumer } from "../support/queues";
import { insertVerifiedDomain, sendingSetup } from "../support/sending";
import type { Contact } from "../support/api";

const testEnv = env as Env;
const CONTROL_TABLES = ["api_keys", "domains", "domain_releases", "project_shards"];

/** The data tables' schema of one database: every table, index and trigger but the control ones and D1's own. */
async function dataSchema(d1: D1Database) {
  const { results } = await d1
    .prepare(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations' ORDER BY type, name",
    )
    .all<{ type: string; name: string; tbl_name: string; sql: string }>();
  return results.map((r) => ({ ...r, sql: r.sql.replace(/\s+/g, " ").trim() }));
}

const count = async (d1: D1Database, table: string, projectId: string) =>
  (await d1.prepare(`SELECT count(*) AS n FROM ${table} WHERE project_id = ?1`).bind(projectId).first<{ n: number }>())!.n;

afterEach(() => {
  vi.restoreAllMocks();
});

describe("migrations: control and data", () => {
  it("every data table, index and trigger of DB (migrations/) is on SHARD_1 (migrations-data/) exactly so, and no control table is", async () => {
    const onDb = (await dataSchema(testEnv.DB)).filter((r) => !CONTROL_TABLES.includes(r.tbl_name));
    const onShard = await dataSchema(shardDb(testEnv, 1));
    expect(onShard.filter((r) => CONTROL_TABLES.includes(r.tbl_name))).toEqual([]);
    // A data migration added to one directory and not the other shows here, named.
    expect(onShard.map((r) => `${r.type} ${r.name}: ${r.sql}`)).toEqual(onDb.map((r) => `${r.type} ${r.name}: ${r.sql}`));
    expect(onDb.length).toBeGreaterThan(50);
  });
});

describe("placement", () => {
  it("chooses the least-filled shard under the limit (ties: the lowest id), never a full one, and none when all are full", () => {
    expect(chooseShard([{ shard: 0, bytes: 500 }], 1000)).toBe(0);
    expect(
      chooseShard(
        [
          { shard: 0, bytes: 500 },
          { shard: 1, bytes: 200 },
          { shard: 2, bytes: 300 },
        ],
        1000,
      ),
    ).toBe(1);
    expect(
      chooseShard(
        [
          { shard: 0, bytes: 200 },
          { shard: 1, bytes: 200 },
        ],
        1000,
      ),
    ).toBe(0);
    // A shard at or over the fill limit takes no new project, however empty the others look.
    expect(
      chooseShard(
        [
          { shard: 0, bytes: 100 },
          { shard: 1, bytes: 1000 },
        ],
        1000,
      ),
    ).toBe(0);
    expect(
      chooseShard(
        [
          { shard: 0, bytes: 1500 },
          { shard: 1, bytes: 999 },
        ],
        1000,
      ),
    ).toBe(1);
    expect(
      chooseShard(
        [
          { shard: 0, bytes: 1000 },
          { shard: 1, bytes: 2000 },
        ],
        1000,
      ),
    ).toBeNull();
  });

  it("places a new project on the deployment's least-filled shard (the tests' SHARD_1, smaller than DB); every shard full is a clear error", async () => {
    expect(shardIds(testEnv)).toEqual([0, 1]);
    expect(await placeProject(testEnv)).toBe(1);
    const full = { ...testEnv, SHARD_FILL_LIMIT_BYTES: "4096" } as Env;
    const error = await placeProject(full).catch((err) => err);
    expect(error).toBeInstanceOf(AllShardsFullError);
    expect(String(error.message)).toMatch(/Every data shard is over its fill limit \(4096 bytes: shard 0 \d+, shard 1 \d+\).*add a shard/);
  });
});

describe("dbFor", () => {
  it("a project without a project_shards row is on shard 0 (DB); one placed on shard 1 is on SHARD_1; the route is cached for SHARD_CACHE_TTL_MS", async () => {
    const old = await newProject("before shards");
    expect(await dbFor(testEnv, old.id)).toBe(testEnv.DB);
    const placed = await newProject("on shard 1", { shard: 1 });
    expect(await dbFor(testEnv, placed.id)).toBe(shardDb(testEnv, 1));

    // The map changes behind the isolate's back (a move): the cached route holds until its TTL, then the new one is read.
    const start = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(start);
    forgetRoute(placed.id);
    expect(await dbFor(testEnv, placed.id)).toBe(shardDb(testEnv, 1));
    await controlDb(testEnv).prepare("UPDATE project_shards SET shard = 0 WHERE project_id = ?1").bind(placed.id).run();
    vi.spyOn(Date, "now").mockReturnValue(start + SHARD_CACHE_TTL_MS);
    expect(await dbFor(testEnv, placed.id)).toBe(shardDb(testEnv, 1));
    vi.spyOn(Date, "now").mockReturnValue(start + SHARD_CACHE_TTL_MS + 1);
    expect(await dbFor(testEnv, placed.id)).toBe(testEnv.DB);
  });
});

describe("a project on shard 1", () => {
  it("its API reads and writes reach SHARD_1 only; its key, project and shard stay in the control database", async () => {
    const p = await newProject("shard one", { shard: 1 });
    const created = await p.api.post<Contact>("/contacts", { email: "one@example.com", subscribed: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await p.api.get<Contact>(`/contacts/${created.body.id}`)).body.email).toBe("one@example.com");

    const shard1 = shardDb(testEnv, 1);
    expect(await count(shard1, "contacts", p.id)).toBe(1);
    expect(await count(testEnv.DB, "contacts", p.id)).toBe(0);
    expect(await count(testEnv.DB, "api_keys", p.id)).toBe(2);
    // Its data-side row is on the shard, its registry row in control.
    for (const d1 of [shard1, testEnv.DB])
      expect(await d1.prepare("SELECT name FROM projects WHERE id = ?1").bind(p.id).first()).toEqual({ name: "shard one" });
  });

  it("a send: the message carries shard 1, the consumer sends from SHARD_1, the links it signs name the shard; a message without shard is shard 0", async () => {
    const s = await sendingSetup({}, { shard: 1 });
    const sent = await s.send({ to: "reader@example.com", from: s.from, subject: "Hi", body: '<p>Hi <a href="https://example.com/x">x</a></p>' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const [message] = s.queue.take();
    const emailId = sent.body.data.emails[0].email;
    expect(message.body).toEqual({ emailId, projectId: s.project.id, shard: 1 });
    await s.deliver([message.body]);
    expect(s.ses.calls).toHaveLength(1);
    const row = await shardDb(testEnv, 1).prepare("SELECT status FROM emails WHERE id = ?1").bind(emailId).first<{ status: string }>();
    expect(row?.status).toBe("SENT");
    expect(await testEnv.DB.prepare("SELECT id FROM emails WHERE id = ?1").bind(emailId).first()).toBeNull();
    // The open pixel and the click link name the shard, so the key-less route reaches it without a lookup.
    const html = s.ses.calls[0].mime.parts.find((part) => part.contentType.startsWith("text/html"))!.text;
    expect(html).toContain(`/t/o/${emailId}~1?s=`);
    expect(html).toContain(`/t/c/${emailId}~1?u=`);

    // The same message body without `shard` (sent before shards existed) is looked for on shard 0: there it is unknown.
    const old = await newProject("old");
    const oldEmail = await insertSentEmail(old, { status: "QUEUED" as never });
    const run = await runConsumer(SEND_QUEUE, s.env, [{ body: { emailId: oldEmail.id, projectId: old.id } }]);
    expect(run.retryMessages).toEqual([]);
  });

  it("its unsubscribe link names shard 1 and works; a link without a shard (sent before shards) is shard 0; a link naming the old shard of a moved email still finds it", async () => {
    const p = await newProject("links", { shard: 1 });
    const shard1 = shardDb(testEnv, 1);
    const email = await insertSentEmail(p, { d1: shard1 });
    const url = await unsubscribeUrl(testEnv.PUBLIC_URL!, testEnv.LINK_SIGNING_SECRET!, linkId(email.id, 1));
    expect(url).toContain(`/unsubscribe/${email.id}~1.`);
    const res = await call("POST", url.slice(BASE.length), {
      rawBody: "List-Unsubscribe=One-Click",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(200);
    expect((await p.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);

    const old = await newProject("before shards");
    const oldEmail = await insertSentEmail(old);
    const plain = await unsubscribeUrl(testEnv.PUBLIC_URL!, testEnv.LINK_SIGNING_SECRET!, oldEmail.id);
    expect((await call("GET", plain.slice(BASE.length))).status).toBe(200);
    // A link that names shard 1 for an email now on shard 0 (its project moved): the other shards are tried.
    const stale = await unsubscribeUrl(testEnv.PUBLIC_URL!, testEnv.LINK_SIGNING_SECRET!, linkId(oldEmail.id, 1));
    expect((await call("GET", stale.slice(BASE.length))).status).toBe(200);
    // So does its open pixel: the open is counted on the shard the email is on now.
    const pixel = await openPixelUrl(testEnv.PUBLIC_URL!, testEnv.LINK_SIGNING_SECRET!, linkId(oldEmail.id, 1));
    expect((await call("GET", pixel.slice(BASE.length))).status).toBe(200);
    expect(await testEnv.DB.prepare("SELECT opens FROM emails WHERE id = ?1").bind(oldEmail.id).first("opens")).toBe(1);
  });

  it("what the key lookup reads stays in step: the reputation pause of a shard-1 project and the owner's resume reach the control row; double opt-in too", async () => {
    const p = await newProject("bad list", { shard: 1 });
    const shard1 = shardDb(testEnv, 1);
    const day = Math.floor(Date.now() / 86_400_000);
    await shard1.prepare("INSERT INTO project_reputation (project_id, day, sent, bounced, complained) VALUES (?1, ?2, 1000, 200, 0)").bind(p.id, day).run();
    expect(await runReputationCheck(shardEnv(testEnv, 1), new Date())).toEqual({ paused: 1 });
    const paused = await p.api.post<{ error: { code: string } }>("/v1/send", { to: "a@example.com", from: "a@x.test", subject: "s", body: "b" });
    expect(paused.status).toBe(403);
    expect(paused.body.error.code).toBe("SENDING_PAUSED");
    const pausedAt = (d1: D1Database) => d1.prepare("SELECT sending_paused_at AS at FROM projects WHERE id = ?1").bind(p.id).first("at");
    expect(await pausedAt(testEnv.DB)).not.toBeNull();

    expect((await p.api.post("/project/sending/resume")).status).toBe(200);
    expect(await pausedAt(shard1)).toBeNull();
    expect(await pausedAt(testEnv.DB)).toBeNull();

    // Double opt-in (the key lookup hands it to POST /v1/track): written to the shard's row and the control row.
    const domain = await insertVerifiedDomain(p.id);
    const template = await p.api.post<{ id: string }>("/templates", {
      name: "Confirm",
      subject: "Confirm",
      body: '<a href="{{confirmUrl}}">confirm</a>',
      type: "TRANSACTIONAL",
      from: `hi@${domain}`,
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const on = await p.api.patch("/project", { doubleOptIn: true, doubleOptInTemplateId: template.body.id });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    for (const d1 of [shard1, testEnv.DB]) expect(await d1.prepare("SELECT double_opt_in AS on_ FROM projects WHERE id = ?1").bind(p.id).first("on_")).toBe(1);
  });

  it("a cron tick runs every data job on each shard (job@1), the domain jobs once", async () => {
    const results = await runScheduledJobs(shardEnv(testEnv, 0), { scheduledTime: Date.now() });
    expect(Object.keys(results)).toEqual(expect.arrayContaining(["stuckEmails", "stuckEmails@1", "retention", "retention@1", "domainChecks"]));
    expect(Object.keys(results)).not.toContain("domainChecks@1");
    expect(results["stuckEmails@1"]).not.toHaveProperty("error");
  });
});
