/**
 * A list exported from another tool imports as it is (../shared/CONTRACT.md "Contact import as exported"):
 * the email and subscription columns under their names, every other column a data key in lower camelCase,
 * numbers and booleans stored as such; an explicit `columns` mapping; duplicates counted; the flat export.
 * The headers are the first lines of each tool's own audience / contact export.
 */
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { call, type ErrorBody } from "../support/http";
import { importSetup } from "../support/imports";

const EXPORTS: { tool: string; csv: string; email: string; data: Record<string, unknown> }[] = [
  {
    tool: "Mailchimp (audience export)",
    csv:
      '"Email Address","First Name","Last Name",Address,Phone,Birthday,MEMBER_RATING,OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,LATITUDE,LONGITUDE,GMTOFF,DSTOFF,TIMEZONE,CC,REGION,LAST_CHANGED,LEID,EUID,NOTES,TAGS\n' +
      'zoe@example.com,Zoë,Brown,,,,3,"2024-03-01 10:00:00",,,,,,,,,,,"2024-03-02 11:00:00",123,abc,,"""vip"""\n',
    email: "zoe@example.com",
    data: { firstName: "Zoë", lastName: "Brown", memberRating: 3, optinTime: "2024-03-01 10:00:00", leid: 123, euid: "abc" },
  },
  {
    tool: "Brevo (Sendinblue)",
    csv: "CONTACT ID,EMAIL,FIRSTNAME,LASTNAME,SMS,DOUBLE_OPT-IN,OPT_IN\n42,ada@example.com,Ada,Lovelace,,Yes,yes\n",
    email: "ada@example.com",
    data: { contactId: 42, firstname: "Ada", lastname: "Lovelace", doubleOptIn: "Yes" },
  },
  {
    tool: "SendGrid (Marketing contacts)",
    csv: "email,first_name,last_name,address_line_1,city,state_province_region,postal_code,country,CONTACT_ID,CREATED_AT,UPDATED_AT\nbob@example.com,Bob,Smith,,Oslo,,0150,NO,c-1,2024-01-01T00:00:00Z,2024-01-02T00:00:00Z\n",
    email: "bob@example.com",
    data: { firstName: "Bob", lastName: "Smith", city: "Oslo", postalCode: "0150", country: "NO", contactId: "c-1" },
  },
  {
    tool: "Klaviyo (profiles)",
    csv: "Email,First Name,Last Name,Phone Number,Organization,Email Marketing Consent,Klaviyo ID\ncy@example.com,Cy,Young,,Acme,SUBSCRIBED,01H\n",
    email: "cy@example.com",
    data: { firstName: "Cy", lastName: "Young", organization: "Acme", emailMarketingConsent: "SUBSCRIBED", klaviyoId: "01H" },
  },
  {
    tool: "Kit (ConvertKit subscribers)",
    csv: "first_name,email_address,created_at,status,tags\nDee,dee@example.com,2024-02-03,active,news\n",
    email: "dee@example.com",
    data: { firstName: "Dee", status: "active", tags: "news" },
  },
  {
    tool: "Resend (audience contacts)",
    csv: "id,email,first_name,last_name,created_at,unsubscribed\nr-1,eve@example.com,Eve,Ng,2024-04-05,false\n",
    email: "eve@example.com",
    data: { firstName: "Eve", lastName: "Ng", unsubscribed: false },
  },
  {
    tool: "Loops (audience)",
    csv: "Email,First Name,Last Name,Subscribed,User Group,Source\nfay@example.com,Fay,Wu,true,beta,form\n",
    email: "fay@example.com",
    data: { firstName: "Fay", lastName: "Wu", userGroup: "beta", source: "form" },
  },
];

describe("POST /contacts/imports: lists as other tools export them", () => {
  for (const { tool, csv, email, data } of EXPORTS) {
    it(`${tool}: its email column found, every other column a camelCase data key`, async () => {
      const s = await importSetup();
      const job = await s.importCsv(csv);
      expect(job, JSON.stringify(job)).toMatchObject({ status: "COMPLETED", total: 1, created: 1, failed: 0 });
      const contact = (await s.contacts()).get(email);
      expect(contact?.data).toMatchObject(data);
      // Keys a segment and a template can name: letters and digits only.
      for (const key of Object.keys(contact?.data ?? {})) expect(key).toMatch(/^[a-z][A-Za-z0-9]*$/);
    });
  }

  it('a subscription column under another tool\'s name ("Opted In", "OPT_IN") sets the subscription', async () => {
    const s = await importSetup();
    await s.importCsv("E-mail,Opted In\nin@example.com,yes\nout@example.com,no\n");
    const contacts = await s.contacts();
    expect(contacts.get("in@example.com")?.subscribed).toBe(true);
    expect(contacts.get("out@example.com")?.subscribed).toBe(false);
    expect(contacts.get("in@example.com")?.data).toEqual({});
  });

  it("two columns that become the same key are refused as a duplicate column; no email column names what it looks for", async () => {
    const s = await importSetup();
    const twice = await s.request<ErrorBody>("POST", "/contacts/imports", {
      rawBody: "email,First Name,first_name\na@example.com,A,B\n",
      headers: { "Content-Type": "text/csv" },
    });
    expect(twice.status).toBe(422);
    expect(twice.body.error.errors?.[0]?.code).toBe("duplicate_column");
    const none = await s.request<ErrorBody>("POST", "/contacts/imports", { rawBody: "name,phone\nA,1\n", headers: { "Content-Type": "text/csv" } });
    expect(none.status).toBe(422);
    expect(none.body.error.errors?.[0]?.message).toContain("Email Address");
  });
});

describe("POST /contacts/imports: types without a mapping", () => {
  it("a column of decimal numbers is stored as numbers, one of true/false as booleans, a leading zero or a mix stays text", async () => {
    const s = await importSetup();
    const job = await s.importCsv(
      "email,rating,score,vip,zip,phone,mixed,blank\n" +
        "a@example.com,3,-1.5,true,02134,+4712345678,1,\n" +
        "b@example.com,,0.25,FALSE,10001,4712345678,x,\n" +
        "c@example.com,10,0,false,94105,,2,\n",
    );
    expect(job).toMatchObject({ status: "COMPLETED", created: 3, failed: 0 });
    const contacts = await s.contacts();
    expect(contacts.get("a@example.com")?.data).toEqual({ rating: 3, score: -1.5, vip: true, zip: "02134", phone: "+4712345678", mixed: "1" });
    // An empty cell sets nothing; the other rows' types hold.
    expect(contacts.get("b@example.com")?.data).toEqual({ score: 0.25, vip: false, zip: "10001", phone: "4712345678", mixed: "x" });
    expect(contacts.get("c@example.com")?.data).toMatchObject({ rating: 10, score: 0, vip: false });
  });

  it("a numeric data key answers a segment's greater-than, as a user of the imported list expects", async () => {
    const s = await importSetup();
    await s.importCsv('"Email Address",MEMBER_RATING\nlow@example.com,2\nhigh@example.com,4\ntop@example.com,5\n');
    const segment = await s.request<{ id: string }>("POST", "/segments", {
      body: {
        name: "Rated 4+",
        condition: { logic: "AND", groups: [{ filters: [{ field: "data.memberRating", operator: "greaterThanOrEqual", value: 4 }] }] },
      },
    });
    expect(segment.status, JSON.stringify(segment.body)).toBe(201);
    const members = await s.request<{ success: boolean; data: { items: { email: string }[] } }>("GET", `/segments/${segment.body.id}/contacts`);
    expect(members.body.data.items.map((c) => c.email).sort()).toEqual(["high@example.com", "top@example.com"]);
  });
});

describe("POST /contacts/imports?columns=: an explicit mapping", () => {
  const mapping = (columns: unknown) => `?columns=${encodeURIComponent(JSON.stringify(columns))}`;

  it("names each column's target and type: the email under any header, a renamed key, a date, an ignored column", async () => {
    const s = await importSetup();
    const csv =
      "Work address,Rating,Joined,Internal,Newsletter,Zip\n" +
      "ada@example.com,007,2024-03-05 10:30:00,secret,yes,02134\n" +
      "bob@example.com,12,2024-03-06T08:00:00+02:00,secret,no,10001\n";
    const job = await s.importCsv(
      csv,
      mapping({
        "Work address": { to: "email" },
        Rating: { to: "data.score", type: "number" },
        Joined: { type: "date" },
        Internal: { to: "ignore" },
        Newsletter: { to: "subscribed" },
        Zip: { type: "text" },
      }),
    );
    expect(job, JSON.stringify(job)).toMatchObject({ status: "COMPLETED", created: 2, failed: 0 });
    const contacts = await s.contacts();
    expect(contacts.get("ada@example.com")).toMatchObject({ subscribed: true, data: { score: 7, joined: "2024-03-05T10:30:00.000Z", zip: "02134" } });
    expect(contacts.get("bob@example.com")).toMatchObject({ subscribed: false, data: { score: 12, joined: "2024-03-06T06:00:00.000Z", zip: "10001" } });
    expect(contacts.get("ada@example.com")?.data).not.toHaveProperty("internal");
  });

  it("a cell its explicit type cannot read fails its row with the column named; the other rows import", async () => {
    const s = await importSetup();
    const job = await s.importCsv(
      "email,age,since,active\nok@example.com,41,2024-01-31,yes\nbad1@example.com,forty,,\nbad2@example.com,,2024-02-30,\nbad3@example.com,,,maybe\n",
      mapping({ age: { type: "number" }, since: { type: "date" }, active: { type: "boolean" } }),
    );
    expect(job).toMatchObject({ status: "COMPLETED", total: 4, created: 1, failed: 3 });
    expect(job.errors).toEqual([
      { row: 2, message: 'age must be a number, not "forty"' },
      { row: 3, message: expect.stringMatching(/^since must be a date .*"2024-02-30"$/) },
      { row: 4, message: 'active must be true/false, yes/no or 1/0, not "maybe"' },
    ]);
    expect((await s.contacts()).get("ok@example.com")?.data).toEqual({ age: 41, since: "2024-01-31T00:00:00.000Z", active: true });
  });

  it("an unknown header, an unknown target, two email columns or bad JSON is 422 naming columns, and nothing is imported", async () => {
    const s = await importSetup();
    const csv = "email,name\na@example.com,A\n";
    for (const [query, message] of [
      [mapping({ Nickname: { to: "data.nick" } }), /Nickname.*not a column/],
      [mapping({ name: { to: "phone" } }), /to is "email", "subscribed", "ignore" or "data.<key>"/],
      [mapping({ name: { to: "data.first name" } }), /to is "email"/],
      [mapping({ name: { type: "money" } }), /./],
      [mapping({ name: {} }), /names a target/],
      [mapping({ email: { to: "email" }, name: { to: "email" } }), /more than one column to email/],
      ["?columns=%7Bnot-json", /URL-encoded JSON/],
    ] as const) {
      const res = await s.upload<ErrorBody>(csv, query);
      expect(res.status, query).toBe(422);
      expect(res.body.error.errors?.[0]?.field, query).toMatch(/^columns/);
      expect(res.body.error.errors?.map((e) => e.message).join(" "), query).toMatch(message);
    }
    expect((await s.contacts()).size).toBe(0);
    const jobs = await s.request<{ data: { items: unknown[] } }>("GET", "/contacts/imports");
    expect(jobs.body.data.items).toEqual([]);
  });
});

describe("POST /contacts/imports: duplicates and the subscription choice, shown on the job", () => {
  it("rows whose email appears again later are counted in duplicates and listed with the row that won", async () => {
    const s = await importSetup();
    const job = await s.importCsv("email,plan\nada@example.com,free\nbob@example.com,free\nADA@example.com,pro\nada@example.com,team\nnot-an-email,x\n");
    expect(job).toMatchObject({ status: "COMPLETED", total: 3, created: 2, failed: 1, duplicates: 2, subscribedDefault: null });
    expect(job.errors).toEqual([
      { row: 1, message: "Duplicate: the same email appears again in row 3, which was imported instead" },
      { row: 3, message: "Duplicate: the same email appears again in row 4, which was imported instead" },
      { row: 5, message: "Invalid email address: not-an-email" },
    ]);
    expect((await s.contacts()).get("ada@example.com")?.data).toEqual({ plan: "team" });
  });

  it("subscribedDefault says what rows without a subscribed value got", async () => {
    const s = await importSetup();
    const yes = await s.importCsv("email,subscribed\nin@example.com,\nout@example.com,false\n", "?subscribed=true");
    expect(yes).toMatchObject({ subscribedDefault: true, created: 2 });
    const contacts = await s.contacts();
    expect(contacts.get("in@example.com")?.subscribed).toBe(true);
    expect(contacts.get("out@example.com")?.subscribed).toBe(false);
    const no = await s.importCsv("email\nlater@example.com\n", "?subscribed=false");
    expect(no.subscribedDefault).toBe(false);
  });
});

describe("GET /contacts/export: format=flat and bom=true", () => {
  it("flat writes one column per data key, sorted; bom starts the file with a UTF-8 BOM; the default export still imports back unchanged", async () => {
    const s = await importSetup();
    await s.importCsv('email,First Name,rating,tags\nzoe@example.com,Zoë,4,\nli@example.com,Li,,"a,b"\n', "?subscribed=true");
    await s.request("PATCH", `/contacts/${(await s.contacts()).get("li@example.com")?.id}`, {
      body: { data: { nested: { x: 1 }, email: "alias@example.com" } },
    });
    const bytes = (query: string) => call<Uint8Array>("GET", `/contacts/export${query}`, { key: s.project.secretKey, env: s.testEnv, binary: true });
    const flat = await bytes("?format=flat&bom=true");
    expect(flat.status).toBe(200);
    expect([...flat.body.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const rows = parse(new TextDecoder().decode(flat.body.slice(3))) as string[][];
    expect(rows[0]).toEqual(["id", "email", "subscribed", "createdAt", "updatedAt", "data.email", "firstName", "nested", "rating", "tags"]);
    const byEmail = new Map(rows.slice(1).map((r) => [r[1], r]));
    expect(byEmail.get("zoe@example.com")?.slice(5)).toEqual(["", "Zoë", "", "4", ""]);
    expect(byEmail.get("li@example.com")?.slice(5)).toEqual(["alias@example.com", "Li", '{"x":1}', "", "a,b"]);

    const plain = await bytes("");
    expect([...plain.body.slice(0, 3)]).not.toEqual([0xef, 0xbb, 0xbf]);
    const before = await s.contacts();
    const back = await s.importCsv(new TextDecoder().decode(plain.body));
    expect(back).toMatchObject({ status: "COMPLETED", updated: 2, failed: 0 });
    const after = await s.contacts();
    for (const [email, contact] of before) expect(after.get(email)?.data, email).toEqual(contact.data);
  });
});
