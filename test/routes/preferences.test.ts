import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { preferencesUrl, unsubscribeUrl } from "../../src/services/tracking/links";
import { insertSentEmail } from "../support/emails";
import { BASE, call, newProject, type TestProject } from "../support/http";
import { recordedEvents } from "../support/webhooks";

const SECRET = env.LINK_SIGNING_SECRET!;
const pathOf = async (emailId: string) => (await preferencesUrl(env.PUBLIC_URL!, SECRET, emailId)).slice(BASE.length);
const post = (path: string, body: string) => call("POST", path, { rawBody: body, headers: { "Content-Type": "application/x-www-form-urlencoded" } });

async function setup(name = "Acme <News>") {
  const project = await newProject(name);
  for (const body of [
    { key: "news", name: "News & updates", description: "Monthly <b>news</b>", defaultSubscription: "OPT_IN", visibility: "PUBLIC" },
    { key: "events", name: "Events", defaultSubscription: "OPT_OUT", visibility: "PUBLIC" },
    { key: "vip", name: "VIP", defaultSubscription: "OPT_OUT", visibility: "PRIVATE" },
    { key: "staff", name: "Staff only", defaultSubscription: "OPT_OUT", visibility: "PRIVATE" },
  ]) {
    expect((await project.api.post("/topics", body)).status).toBe(201);
  }
  const email = await insertSentEmail(project);
  await project.api.patch(`/contacts/${email.contactId}/topics`, { topics: [{ key: "vip", subscription: "OPT_IN" }] });
  await project.api.post("/webhooks", { url: "https://hooks.example.com/x", events: ["contact.topics.updated", "contact.unsubscribed"] });
  return { project, email, path: await pathOf(email.id) };
}

const topicsOf = async (project: TestProject, contactId: string) =>
  Object.fromEntries(
    (await project.api.get<{ data: { items: { key: string; subscription: string }[] } }>(`/contacts/${contactId}/topics`)).body.data.items.map((t) => [
      t.key,
      t.subscription,
    ]),
  );

describe("the preference page", () => {
  it("shows the project's name, the public topics and the private ones the contact is in, every value escaped; reading changes nothing", async () => {
    const { project, email, path } = await setup();
    const res = await call("GET", path);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/html");
    const html = String(res.body);
    expect(html).toContain('<html lang="en">');
    expect(html).toContain("Acme &lt;News&gt;");
    expect(html).not.toContain("Acme <News>");
    expect(html).toContain("News &amp; updates");
    expect(html).toContain("Monthly &lt;b&gt;news&lt;/b&gt;");
    expect(html).toMatch(/name="topics" value="news" checked/);
    expect(html).toMatch(/name="topics" value="events"(?! checked)/);
    expect(html).toMatch(/name="topics" value="vip" checked/);
    expect(html).not.toContain("Staff only");
    expect(html).toContain('name="all" value="off"');
    expect(html).toContain("Unsubscribe from all marketing");
    expect(html).not.toContain("<script");
    expect(await topicsOf(project, email.contactId!)).toEqual({ news: "OPT_IN", events: "OPT_OUT", vip: "OPT_IN", staff: "OPT_OUT" });
  });

  it("saves the checked boxes (others opted out), records an event per change and one contact.topics.updated, and answers the page again", async () => {
    const { project, email, path } = await setup();
    const before = await recordedEvents(project.id, ["contact.topics.updated"]);
    const res = await post(path, "topics=events&topics=vip");
    expect(res.status).toBe(200);
    expect(String(res.body)).toContain("Your preferences are saved.");
    expect(String(res.body)).toMatch(/name="topics" value="events" checked/);
    expect(await topicsOf(project, email.contactId!)).toEqual({ news: "OPT_OUT", events: "OPT_IN", vip: "OPT_IN", staff: "OPT_OUT" });
    expect((await recordedEvents(project.id, ["contact.topics.updated"])).length).toBe(before.length + 1);
    const payload = await env.DB.prepare("SELECT payload FROM webhook_events WHERE project_id = ? AND type = 'contact.topics.updated' ORDER BY id DESC LIMIT 1")
      .bind(project.id)
      .first<{ payload: string }>();
    expect(JSON.parse(payload!.payload).data).toMatchObject({
      contactId: email.contactId,
      email: email.to,
      source: "preferences",
      topics: expect.arrayContaining([
        expect.objectContaining({ key: "news", subscription: "OPT_OUT" }),
        expect.objectContaining({ key: "events", subscription: "OPT_IN" }),
      ]),
    });
    const events = await project.api.get<{ data: { items: { name: string; data: { topic: string } }[] } }>(`/events?limit=100`);
    const topicEvents = events.body.data.items.filter((e) => e.name.startsWith("topic.") && (e.data as { source?: string }).source === "preferences");
    expect(topicEvents.map((e) => `${e.name}:${e.data.topic}`).sort()).toEqual(["topic.opted_in:events", "topic.opted_out:news"]);
    // Saving the same form again changes nothing and records nothing.
    await post(path, "topics=events&topics=vip");
    expect((await recordedEvents(project.id, ["contact.topics.updated"])).length).toBe(before.length + 1);
    // The subscription itself is untouched.
    expect((await project.api.get<{ subscribed: boolean }>(`/contacts/${email.contactId}`)).body.subscribed).toBe(true);
  });

  it("'Unsubscribe from all marketing' unsubscribes the contact (topics kept); saving with a box checked subscribes it again", async () => {
    const { project, email, path } = await setup();
    const res = await post(path, "all=off");
    expect(res.status).toBe(200);
    expect(String(res.body)).toContain("You are unsubscribed from all marketing");
    expect((await project.api.get<{ subscribed: boolean }>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);
    expect(await recordedEvents(project.id, ["contact.unsubscribed"])).toHaveLength(1);
    expect(await topicsOf(project, email.contactId!)).toMatchObject({ news: "OPT_IN", vip: "OPT_IN" });
    await post(path, "topics=news");
    expect((await project.api.get<{ subscribed: boolean }>(`/contacts/${email.contactId}`)).body.subscribed).toBe(true);
  });

  it("answers an HTML 400 for a forged token or another link's token, and 400 for a body that is not a form", async () => {
    const { email, path } = await setup();
    const unsubscribeToken = (await unsubscribeUrl(env.PUBLIC_URL!, SECRET, email.id)).split("/unsubscribe/")[1];
    for (const bad of [`/preferences/${email.id}.AAAA`, `/preferences/${unsubscribeToken}`, "/preferences/x"]) {
      const res = await call("GET", bad);
      expect(res.status).toBe(400);
      expect(res.headers.get("Content-Type")).toContain("text/html");
      expect((await post(bad, "all=off")).status).toBe(400);
    }
    const json = await call("POST", path, { rawBody: "{}", headers: { "Content-Type": "application/json" } });
    expect(json.status).toBe(400);
  });

  it("{{preferencesUrl}} in a sent body is the signed link of the recipient's page", async () => {
    const project = await newProject("render");
    const email = await insertSentEmail(project);
    // The link renders like {{unsubscribeUrl}}: checked on the rendering path with the same token.
    const { renderBody } = await import("../../src/services/send/render");
    const url = await preferencesUrl(env.PUBLIC_URL!, SECRET, email.id);
    const html = await renderBody(
      '<a href="{{preferencesUrl}}">Preferences</a>',
      { data: {}, email: email.to, unsubscribeUrl: "", preferencesUrl: url },
      "html",
    );
    expect(html).toContain(`href="${url}"`);
    expect((await call("GET", url.slice(BASE.length))).status).toBe(200);
  });
});
