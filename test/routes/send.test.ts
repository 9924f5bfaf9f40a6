import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { emails, idempotencyKeys, suppressions } from "../../src/db/schema";
import { decodeWords } from "../fakes/ses";
import { expectError } from "../support/http";
import { sendingSetup } from "../support/sending";
import type { Env } from "../../src/env";
import type { ContactList, EmailList, Template } from "../support/api";

afterEach(() => vi.restoreAllMocks());

describe("POST /v1/send: accepting", () => {
  it("stores one QUEUED email per recipient, creates their contacts, queues ids and answers as the spec shows", async () => {
    const s = await sendingSetup();
    const res = await s.send({
      to: ["Ada@Example.com", { name: "Bob", email: "bob@example.com" }, "ada@example.com"],
      subject: "Hi",
      body: "<p>Hello</p>",
      from: s.from,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data.emails).toHaveLength(2);
    expect(res.body.data.emails.map((e) => e.contact.email)).toEqual(["ada@example.com", "bob@example.com"]);
    expect(Number.isNaN(Date.parse(res.body.data.timestamp))).toBe(false);

    expect(s.queue.messages.map((m) => m.body.emailId)).toEqual(res.body.data.emails.map((e) => e.email));
    expect(s.ses.calls).toHaveLength(0); // nothing is sent inside the request

    const email = await s.get(`/emails/${res.body.data.emails[0].email}`);
    expect(email.body).toMatchObject({ status: "QUEUED", to: "ada@example.com", from: s.from, subject: "Hi" });
    const contact = await s.get(`/contacts/${res.body.data.emails[0].contact.id}`);
    expect(contact.body).toMatchObject({ email: "ada@example.com", subscribed: false });
  });

  it("stores every recipient's body exactly, also a body near the size limit that JSON escaping doubles", async () => {
    const s = await sendingSetup();
    // 500,000 quotes and backslashes (the body field's limit is 524,288 characters): 1 MB once JSON-escaped,
    // so each email's row goes in a statement of its own.
    const body = `<p>${'"\\'.repeat(250_000)}</p>`;
    const small = await s.send({ to: ["a@example.com", "b@example.com"], subject: "Small", body: "<p>Hi {{email}}</p>", from: s.from });
    const large = await s.send({ to: ["c@example.com", "d@example.com", "e@example.com"], subject: "Large", body, from: s.from });
    expect(small.status, JSON.stringify(small.body)).toBe(200);
    expect(large.status, JSON.stringify(large.body).slice(0, 300)).toBe(200);
    for (const [res, expected] of [
      [small, (to: string) => `<p>Hi ${to}</p>`],
      [large, () => body],
    ] as const) {
      for (const e of res.body.data.emails) {
        const email = await s.get(`/emails/${e.email}`);
        expect(email.body).toMatchObject({ to: e.contact.email, status: "QUEUED" });
        // The stored body (what the consumer will send) and the contact the email belongs to.
        const [row] = await getDb(env.DB).select({ html: emails.html, contactId: emails.contactId }).from(emails).where(eq(emails.id, e.email));
        expect(row.html).toBe(expected(e.contact.email));
        expect(row.contactId).toBe(e.contact.id);
      }
    }
  });

  it("renders variables from request data over contact data, escapes them in HTML, and keeps non-persistent values off the contact", async () => {
    const s = await sendingSetup();
    await s.project.api.post("/contacts", { email: "ada@example.com", data: { firstName: "Ada", plan: "free" } });
    const res = await s.send({
      to: "ada@example.com",
      from: { name: "Shop", email: s.from },
      subject: "Hello {{firstName}} on {{plan}}",
      body: '<p>{{firstName}} {{data.plan}} {{code}} {{missing}}|{{nick ?? "friend"}}|{{email}}</p><a href="{{unsubscribeUrl}}">unsub</a>',
      data: { plan: "<b>pro</b>", code: { value: "X1", persistent: false } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const mime = s.ses.calls[0].mime;
    expect(decodeWords(mime.headers.subject)).toBe("Hello Ada on <b>pro</b>");
    const html = mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    expect(html).toContain("<p>Ada &lt;b&gt;pro&lt;/b&gt; X1 |friend|ada@example.com</p>");
    expect(html).toMatch(/href="http:\/\/edge-mail\.test\/unsubscribe\/[^"]+"/);
    const contact = await s.project.api.get<ContactList>("/contacts?search=ada@example.com");
    expect(contact.body.contacts[0].data).toEqual({ firstName: "Ada", plan: "<b>pro</b>" });
  });

  it("uses a template's subject, body, from and reply-to, with request fields overriding", async () => {
    const s = await sendingSetup();
    const template = await s.project.api.post<Template>("/templates", {
      name: "Welcome",
      subject: "Welcome {{name}}",
      body: "<h1>Hi {{name}}</h1>",
      type: "TRANSACTIONAL",
      from: s.from,
      fromName: "Team",
      replyTo: "support@example.com",
    });
    expect(template.status).toBe(201);
    const res = await s.send({ to: "ada@example.com", template: template.body.id, data: { name: "Ada" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const overridden = await s.send({ to: "bob@example.com", template: template.body.id, subject: "Custom", reply: "help@example.com" });
    expect(overridden.status).toBe(200);
    await s.deliver();
    const [first, second] = s.ses.calls;
    expect(decodeWords(first.mime.headers.subject)).toBe("Welcome Ada");
    expect(decodeWords(first.mime.headers.from)).toBe(`Team <${s.from}>`);
    expect(first.mime.headers["reply-to"]).toContain("support@example.com");
    expect(decodeWords(second.mime.headers.subject)).toBe("Custom");
    expect(second.mime.headers["reply-to"]).toContain("help@example.com");
  });

  it("accepts the Plunk SDK's markdown body", async () => {
    const s = await sendingSetup();
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "md", body: "# Title\n\n**bold** {{x}}", type: "markdown", data: { x: "<i>" } });
    expect(res.status).toBe(200);
    await s.deliver();
    const html = s.ses.calls[0].mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    expect(html).toContain("<h1>Title</h1>");
    expect(html).toContain("<strong>bold</strong> &lt;i&gt;");
  });

  it("adds a plain-text part made from the HTML: named and numeric entities decoded, links shown, images dropped", async () => {
    const s = await sendingSetup();
    const body =
      "<h2>Caf&eacute; &amp; Cr&egrave;me</h2><p>Only&nbsp;&euro;5 &lt;today&gt; &#x1F600; &notin; &NotNestedGreaterGreater;</p>" +
      '<p><a href="https://shop.example/a?b=1&amp;c=2">Shop</a> <img src="https://shop.example/logo.png" alt="Logo"></p>';
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "text part", body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const text = s.ses.calls[0].mime.parts.find((p) => p.contentType.startsWith("text/plain"))!.text;
    expect(text).toContain("CAFÉ & CRÈME");
    expect(text).toContain("Only\u00a0€5 <today> 😀 ∉ ⪢̸");
    // The link is the click-tracking one; its target is the href with &amp; decoded.
    expect(text).toMatch(/Shop\s+\[http:\/\/edge-mail\.test\/t\/c\/[^\]]*u=https%3A%2F%2Fshop\.example%2Fa%3Fb%3D1%26c%3D2&/);
    expect(text).not.toContain("logo.png");
  });

  it("markdown bodies: template data never becomes a link, image or HTML, and no javascript:/data: URL reaches the mail", async () => {
    const s = await sendingSetup();
    const hostile = "[Reset](javascript:alert(1)) ![](https://tracker.example/p.gif) <https://evil.example> www.evil.example <img src=x>";
    const res = await s.send({
      to: "ada@example.com",
      from: s.from,
      subject: "md",
      body: "Hi {{name}}\n\n[Docs](https://docs.example/start) [bad](javascript:alert(2)) ![inline](data:image/png;base64,AAAA)",
      type: "markdown",
      data: { name: hostile },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const mime = s.ses.calls[0].mime;
    const html = mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    const text = mime.parts.find((p) => p.contentType.startsWith("text/plain"))!.text;
    // The value shows as the text it is.
    expect(html).toContain(
      "Hi [Reset](javascript:alert(1)) ![](https://tracker.example/p.gif) &lt;https://evil.example&gt; www.evil.example &lt;img src=x&gt;",
    );
    // Links: only the template's own https link, wrapped by click tracking; images: only the open pixel.
    const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
    expect(hrefs).toHaveLength(1);
    expect(decodeURIComponent(new URL(hrefs[0].replace(/&amp;/g, "&")).searchParams.get("u")!)).toBe("https://docs.example/start");
    const srcs = [...html.matchAll(/src="([^"]*)"/g)].map((m) => m[1]);
    expect(srcs).toHaveLength(1);
    expect(srcs[0]).toMatch(/^http:\/\/edge-mail\.test\/t\/o\//);
    expect(html + text).not.toMatch(/javascript:alert\(2\)|data:image/);
    expect(html).toContain("<a>bad</a>");
  });

  it("refuses a from address whose domain is not verified for this project (403 DOMAIN_NOT_VERIFIED), queueing nothing", async () => {
    const s = await sendingSetup();
    const res = await s.send({ to: "ada@example.com", from: "me@unverified.example", subject: "x", body: "y" });
    expectError(res, 403, "DOMAIN_NOT_VERIFIED");
    const other = await sendingSetup();
    const foreign = await s.send({ to: "ada@example.com", from: other.from, subject: "x", body: "y" });
    expectError(foreign, 403, "DOMAIN_NOT_VERIFIED");
    expect(s.queue.messages).toHaveLength(0);
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(0);
  });

  it("refuses a MARKETING template for an unsubscribed contact (400, nothing queued)", async () => {
    const s = await sendingSetup();
    const template = await s.project.api.post<Template>("/templates", { name: "News", subject: "News", body: "<p>n</p>", type: "MARKETING", from: s.from });
    await s.project.api.post("/contacts", { email: "gone@example.com", subscribed: false });
    await s.project.api.post("/contacts", { email: "fan@example.com", subscribed: true });
    const res = await s.send({ to: ["fan@example.com", "gone@example.com"], template: template.body.id });
    expectError(res, 400, "INVALID_STATE");
    expect(s.queue.messages).toHaveLength(0);
    const ok = await s.send({ to: "fan@example.com", template: template.body.id });
    expect(ok.status).toBe(200);
    await s.deliver();
    const headers = s.ses.calls[0].mime.headers;
    expect(headers["list-unsubscribe"]).toMatch(/^<http:\/\/edge-mail\.test\/unsubscribe\/[^>]+>, <mailto:unsubscribe@/);
    expect(headers["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click");
  });

  it("subscribed: true on a transactional send opts in new contacts only: someone who unsubscribed stays unsubscribed", async () => {
    const s = await sendingSetup();
    await s.project.api.post("/contacts", { email: "left@example.com", subscribed: false });
    const res = await s.send({ to: ["left@example.com", "new@example.com"], subject: "Receipt", body: "<p>r</p>", from: s.from, subscribed: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const list = await s.project.api.get<ContactList>("/contacts?limit=10");
    const byEmail = new Map((list.body.contacts as { email: string; subscribed: boolean }[]).map((c) => [c.email, c.subscribed]));
    expect(byEmail.get("left@example.com")).toBe(false);
    expect(byEmail.get("new@example.com")).toBe(true);
    // subscribed: false still unsubscribes an existing contact.
    await s.project.api.post("/contacts", { email: "fan@example.com", subscribed: true });
    expect((await s.send({ to: "fan@example.com", subject: "Bye", body: "<p>b</p>", from: s.from, subscribed: false })).status).toBe(200);
    const fan = await s.project.api.get<ContactList>("/contacts?search=fan");
    expect(fan.body.contacts[0]).toMatchObject({ email: "fan@example.com", subscribed: false });
  });

  it("answers 404 for another project's template and 422 for a missing subject/body/from", async () => {
    const s = await sendingSetup();
    const other = await sendingSetup();
    const foreign = await other.project.api.post<Template>("/templates", { name: "t", subject: "s", body: "b", type: "TRANSACTIONAL" });
    expectError(await s.send({ to: "a@example.com", template: foreign.body.id, from: s.from }), 404, "NOT_FOUND");
    const missing = expectError(await s.send({ to: "a@example.com" }), 422, "VALIDATION_ERROR");
    expect(missing.errors!.map((e) => e.field).sort()).toEqual(["body", "subject"]);
    const noFrom = expectError(await s.send({ to: "a@example.com", subject: "s", body: "b" }), 422);
    expect(noFrom.errors!.map((e) => e.field)).toEqual(["from"]);
  });

  it("limits recipients to 50 and attachments to 10 items / 7 MB with checked names and types", async () => {
    const s = await sendingSetup();
    const base = { from: s.from, subject: "s", body: "b" };
    const many = Array.from({ length: 51 }, (_, i) => `r${i}@example.com`);
    expectError(await s.send({ ...base, to: many }), 422);
    const att = (over: object) => ({ filename: "a.txt", content: btoa("hello"), contentType: "text/plain", ...over });
    const cases: [object[], string][] = [
      [Array.from({ length: 11 }, () => att({})), "attachments"],
      [[att({ filename: "run.exe" })], "attachments.0.filename"],
      [[att({ filename: "a\r\nb.txt" })], "attachments.0.filename"],
      [[att({ contentType: "text/plain\r\nX-Evil: 1" })], "attachments.0.contentType"],
      [[att({ content: "not base64!" })], "attachments.0.content"],
    ];
    for (const [attachments, field] of cases) {
      const error = expectError(await s.send({ ...base, to: "a@example.com", attachments }), 422);
      expect(error.errors!.map((e) => e.field)).toContain(field);
    }
    const big = "A".repeat(Math.ceil((5.5 * 1024 * 1024) / 3) * 4);
    const tooBig = expectError(await s.send({ ...base, to: "a@example.com", attachments: [att({ content: big }), att({ content: big })] }), 422);
    expect(tooBig.errors!.map((e) => e.field)).toContain("attachments");
    expect(s.queue.messages).toHaveLength(0);
  });

  it("sends attachments as MIME parts to every recipient", async () => {
    const s = await sendingSetup();
    const pdf = btoa("%PDF-1.4 fake");
    const res = await s.send({
      to: ["a@example.com", "b@example.com"],
      from: s.from,
      subject: "files",
      body: "<p>see attached</p>",
      attachments: [
        { filename: "report.pdf", content: pdf, contentType: "application/pdf" },
        { filename: "résumé.txt", content: btoa("cv"), contentType: "text/plain" },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    expect(s.ses.calls).toHaveLength(2);
    for (const call of s.ses.calls) {
      const attachments = call.mime.parts.filter((p) => /attachment/.test(p.headers["content-disposition"] ?? ""));
      expect(attachments.map((p) => p.base64)).toEqual([pdf, btoa("cv")]);
      expect(attachments[0].headers["content-disposition"]).toContain('filename="report.pdf"');
      // A non-ASCII name as an RFC 2231 parameter (UTF-8, percent-encoded), never an encoded-word in quotes.
      expect(attachments[1].headers["content-disposition"]).toBe("attachment; filename*=utf-8''r%C3%A9sum%C3%A9.txt");
    }
  });
});

describe("POST /v1/send: deployment settings", () => {
  it("fails with a message naming a missing secret, and stores nothing", async () => {
    const s = await sendingSetup({ LINK_SIGNING_SECRET: undefined });
    const res = await s.send({ to: "a@example.com", from: s.from, subject: "s", body: "b" });
    const error = expectError(res, 500, "INTERNAL_ERROR");
    expect(error.message).toContain("LINK_SIGNING_SECRET");
    expect(s.queue.messages).toHaveLength(0);
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(0);
  });
});

describe("POST /v1/send: suppressed recipients", () => {
  it("does not send to addresses that bounced or complained, and says so in the response", async () => {
    const s = await sendingSetup();
    const db = getDb(env.DB);
    await db.insert(suppressions).values([
      { projectId: s.project.id, email: "bounced@example.com", reason: "BOUNCE", createdAt: new Date() },
      { projectId: s.project.id, email: "angry@example.com", reason: "COMPLAINT", createdAt: new Date() },
    ]);
    const res = await s.send({ to: ["ok@example.com", "Bounced@example.com", "angry@example.com"], from: s.from, subject: "s", body: "b" });
    expect(res.status).toBe(200);
    expect(res.body.data.emails.map((e) => e.contact.email)).toEqual(["ok@example.com"]);
    expect(res.body.data.suppressed).toEqual([
      { email: "bounced@example.com", reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" },
      { email: "angry@example.com", reason: "COMPLAINT", stream: "ALL", gate: "SUPPRESSED" },
    ]);
    expect(s.queue.messages).toHaveLength(1);

    // Suppression is per project.
    const other = await sendingSetup();
    const theirs = await other.send({ to: "bounced@example.com", from: other.from, subject: "s", body: "b" });
    expect(theirs.body.data.suppressed).toEqual([]);
    expect(theirs.body.data.emails).toHaveLength(1);
  });
});

describe("POST /v1/send without reads (nothing it renders needs stored data; test/app.round-trips.test.ts pins which sends take this path)", () => {
  it("leaves suppressed recipients out, writes nothing for them, and does not count them against the daily quota", async () => {
    const s = await sendingSetup({ QUOTA_EMAILS_PER_DAY: "3" } as Partial<Env>);
    // A first send puts the from domain in this isolate's verified-domain cache.
    expect((await s.send({ to: "first@example.com", from: s.from, subject: "s", body: "b" })).status).toBe(200);
    await getDb(env.DB).insert(suppressions).values({ projectId: s.project.id, email: "bounced@example.com", reason: "BOUNCE", createdAt: new Date() });
    // 1 sent today + 2 sendable = the quota of 3; counting the suppressed address would pass it.
    const res = await s.send({
      to: ["ok@example.com", "bounced@example.com", "ok2@example.com"],
      from: s.from,
      subject: "Hi {{n}}",
      body: "<p>{{n}}</p>",
      data: { n: 1 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.emails.map((e) => e.contact.email)).toEqual(["ok@example.com", "ok2@example.com"]);
    expect(res.body.data.suppressed).toEqual([{ email: "bounced@example.com", reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" }]);
    expect(s.queue.messages).toHaveLength(3);
    const stored = await getDb(env.DB).select({ to: emails.toAddress }).from(emails).where(eq(emails.projectId, s.project.id));
    expect(stored.map((e) => e.to).sort()).toEqual(["first@example.com", "ok2@example.com", "ok@example.com"]);
    const contacts = await s.project.api.get<ContactList>("/contacts");
    expect(contacts.body.contacts.map((c) => c.email).sort()).toEqual(["first@example.com", "ok2@example.com", "ok@example.com"]);
    // The quota still holds: the next email is one too many.
    expectError(await s.send({ to: "late@example.com", from: s.from, subject: "s", body: "b" }), 429, "QUOTA_EXCEEDED");
  });

  it("the render budget counts only the recipients sent to, as on the reading path", async () => {
    const s = await sendingSetup();
    expect((await s.send({ to: "first@example.com", from: s.from, subject: "s", body: "b" })).status).toBe(200);
    await getDb(env.DB).insert(suppressions).values({ projectId: s.project.id, email: "bounced@example.com", reason: "BOUNCE", createdAt: new Date() });
    // About 40,000 template steps per recipient against 100,000 for the request: two fit, three do not.
    const body = { from: s.from, subject: "s", body: "{% for i in (1..20000) %}x{% endfor %}" };
    const three = await s.send({ ...body, to: ["a@example.com", "b@example.com", "c@example.com"] });
    const refused = expectError(three, 422);
    expect(refused.errors![0].code).toBe("render_budget");
    const res = await s.send({ ...body, to: ["a@example.com", "bounced@example.com", "b@example.com"] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.emails.map((e) => e.contact.email)).toEqual(["a@example.com", "b@example.com"]);
    expect(res.body.data.suppressed).toEqual([{ email: "bounced@example.com", reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" }]);
  });

  it("a contact's stored data fills every variable the request's data leaves out, however the template reads it", async () => {
    const s = await sendingSetup();
    expect((await s.send({ to: "first@example.com", from: s.from, subject: "s", body: "b" })).status).toBe(200);
    await s.deliver();
    await s.project.api.post("/contacts", { email: "ada@example.com", data: { plan: "pro", firstName: "Ada", tags: ["a", "b"] } });
    const res = await s.send({
      to: "ada@example.com",
      from: s.from,
      subject: "{{ firstName | upcase }} {{n}}",
      body: "<p>{% if plan == 'pro' %}P{% endif %}|{{data.firstName}}|{% for t in tags %}{{t}}{% endfor %}|{{ nick | default: firstName }}|{{ n | default: plan }}</p>",
      data: { n: 1 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    const mime = s.ses.calls.at(-1)!.mime;
    expect(decodeWords(mime.headers.subject)).toBe("ADA 1");
    expect(mime.parts.find((p) => p.contentType.startsWith("text/html"))!.text).toContain("<p>P|Ada|ab|Ada|1</p>");
  });
});

describe("POST /v1/send: header injection", () => {
  it("refuses CR/LF in addresses, names, subject and header values, and reserved header names", async () => {
    const s = await sendingSetup();
    const base = { to: "a@example.com", from: s.from, subject: "s", body: "b" };
    const attempts: [object, string][] = [
      [{ to: "a@example.com\r\nBcc: victim@example.com" }, "to"],
      [{ to: { name: "A\r\nBcc: v@example.com", email: "a@example.com" } }, "to"],
      [{ from: { name: "Shop\nBcc: v@example.com", email: s.from } }, "from"],
      [{ name: "Shop\r\nX: y" }, "name"],
      [{ subject: "Hi\r\nBcc: victim@example.com" }, "subject"],
      [{ reply: "r@example.com\r\nBcc: v@example.com" }, "reply"],
      [{ headers: { "X-Tag": "a\r\nBcc: v@example.com" } }, "headers.X-Tag"],
      [{ headers: { "X-Bad Name": "a" } }, "headers.X-Bad Name"],
      [{ headers: { From: "boss@example.com" } }, "headers.From"],
      [{ headers: { "message-id": "<x@y>" } }, "headers.message-id"],
      [{ headers: { "DKIM-Signature": "v=1" } }, "headers.DKIM-Signature"],
      [{ headers: { Subject: "other" } }, "headers.Subject"],
    ];
    for (const [over, field] of attempts) {
      const error = expectError(await s.send({ ...base, ...over }), 422, "VALIDATION_ERROR");
      expect(error.errors!.map((e) => e.field).join(","), JSON.stringify(over)).toContain(field);
    }
    expect(s.queue.messages).toHaveLength(0);
  });

  it("keeps line breaks that template data puts into a subject inside the one Subject header", async () => {
    const s = await sendingSetup();
    await s.send({ to: "a@example.com", from: s.from, subject: "Hi {{x}}", body: "b", data: { x: "there\r\nBcc: victim@example.com" } });
    await s.deliver();
    const mime = s.ses.calls[0].mime;
    expect(mime.headers.bcc).toBeUndefined();
    expect(decodeWords(mime.headers.subject)).toBe("Hi there Bcc: victim@example.com");
  });

  it("passes allowed custom headers through", async () => {
    const s = await sendingSetup();
    await s.send({ to: "a@example.com", from: s.from, subject: "s", body: "b", headers: { "X-Campaign": "spring", "X-Priority": "1" } });
    await s.deliver();
    expect(s.ses.calls[0].mime.headers["x-campaign"]).toBe("spring");
    expect(s.ses.calls[0].mime.headers["x-priority"]).toBe("1");
  });
});

describe("POST /v1/send: Idempotency-Key", () => {
  it("replays the original response for the same key and body and sends nothing new", async () => {
    const s = await sendingSetup();
    const body = { to: ["a@example.com", "b@example.com"], from: s.from, subject: "s", body: "b" };
    const first = await s.send(body, { "Idempotency-Key": "order-42" });
    expect(first.status).toBe(200);
    const again = await s.send(body, { "Idempotency-Key": "order-42" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(s.queue.messages).toHaveLength(2);
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(2);
  });

  it("answers 409 for the same key with a different body (as Plunk does), and accepts other keys and keyless repeats", async () => {
    const s = await sendingSetup();
    const body = { to: "a@example.com", from: s.from, subject: "s", body: "b" };
    await s.send(body, { "Idempotency-Key": "k1" });
    const conflict = expectError(await s.send({ ...body, subject: "changed" }, { "Idempotency-Key": "k1" }), 409, "CONFLICT");
    expect(conflict.errors![0]).toMatchObject({ field: "Idempotency-Key", code: "idempotency_key_reused" });
    expect((await s.send(body, { "Idempotency-Key": "k2" })).status).toBe(200);
    expect((await s.send(body)).status).toBe(200);
    expect(s.queue.messages).toHaveLength(3);
  });

  it("sends once when the same keyed request arrives several times at once", async () => {
    const s = await sendingSetup();
    const body = { to: ["a@example.com", "b@example.com"], from: s.from, subject: "s", body: "b" };
    const responses = await Promise.all(Array.from({ length: 5 }, () => s.send(body, { "Idempotency-Key": "burst" })));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    for (const r of responses) expect(r.body.data.emails).toEqual(responses[0].body.data.emails);
    expect(s.queue.messages).toHaveLength(2);
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(2);
  });

  it("sends one of two different bodies arriving at once under one key: the other answers 409", async () => {
    const s = await sendingSetup();
    const body = (subject: string) => ({ to: "a@example.com", from: s.from, subject, body: "b" });
    const responses = await Promise.all(["one", "two", "one", "two"].map((subject) => s.send(body(subject), { "Idempotency-Key": "race" })));
    const won = responses.filter((r) => r.status === 200);
    expect(responses.map((r) => r.status).sort()).toEqual([200, 200, 409, 409]);
    expect(won[1].body).toEqual(won[0].body);
    expect(s.queue.messages).toHaveLength(1);
  });

  it("accepts a key again once its record is older than 24 hours", async () => {
    const s = await sendingSetup();
    const body = { to: "a@example.com", from: s.from, subject: "s", body: "b" };
    await s.send(body, { "Idempotency-Key": "daily" });
    const db = getDb(env.DB);
    await db
      .update(idempotencyKeys)
      .set({ createdAt: new Date(Date.now() - 25 * 60 * 60 * 1000) })
      .where(eq(idempotencyKeys.key, "daily"));
    const again = await s.send(body, { "Idempotency-Key": "daily" });
    expect(again.status).toBe(200);
    expect(s.queue.messages).toHaveLength(2);
  });

  it("rejects malformed keys, and keys are per project", async () => {
    const s = await sendingSetup();
    const body = { to: "a@example.com", from: s.from, subject: "s", body: "b" };
    expectError(await s.send(body, { "Idempotency-Key": "x".repeat(256) }), 422);
    expectError(await s.send(body, { "Idempotency-Key": "has space\u00e9" }), 422);
    const other = await sendingSetup();
    await s.send(body, { "Idempotency-Key": "shared" });
    const theirs = await other.send({ ...body, from: other.from }, { "Idempotency-Key": "shared" });
    expect(theirs.status).toBe(200);
    expect(other.queue.messages).toHaveLength(1);
  });
});

describe("GET /emails", () => {
  it("lists newest first with status and contact filters, and hides other projects' emails", async () => {
    const s = await sendingSetup();
    const res = await s.send({ to: ["a@example.com", "b@example.com", "c@example.com"], from: s.from, subject: "s", body: "b" });
    const [a] = res.body.data.emails;
    await s.deliver(
      s.queue
        .take()
        .slice(0, 1)
        .map((m) => m.body),
    );
    const sent = await s.get<EmailList>("/emails?status=SENT");
    expect(sent.body.data.items.map((e) => e.id)).toEqual([a.email]);
    const queued = await s.get<EmailList>("/emails?status=QUEUED&limit=1");
    expect(queued.body.data).toMatchObject({ hasMore: true, total: 2 });
    const next = await s.get<EmailList>(`/emails?status=QUEUED&limit=1&cursor=${queued.body.data.nextCursor}`);
    expect(next.body.data.hasMore).toBe(false);
    expect(next.body.data.items[0].id).not.toBe(queued.body.data.items[0].id);
    const byContact = await s.get<EmailList>(`/emails?contactId=${a.contact.id}`);
    expect(byContact.body.data.items.map((e) => e.id)).toEqual([a.email]);
    expectError(await s.get("/emails?status=LOST"), 422);

    const other = await sendingSetup();
    expectError(await other.get(`/emails/${a.email}`), 404, "NOT_FOUND");
    expect((await other.get<EmailList>("/emails")).body.data.total).toBe(0);
  });
});
