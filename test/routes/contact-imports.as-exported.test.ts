/**
 * A list exported from another tool imports as it is (../shared/CONTRACT.md "Contact import as exported"):
 * the email and subscription columns under their names, every other column a data key in lower camelCase.
 * The headers are the first lines of each tool's own audience / contact export.
 */
import { describe, expect, it } from "vitest";
import type { ErrorBody } from "../support/http";
import { importSetup } from "../support/imports";

const EXPORTS: { tool: string; csv: string; email: string; data: Record<string, string> }[] = [
  {
    tool: "Mailchimp (audience export)",
    csv:
      '"Email Address","First Name","Last Name",Address,Phone,Birthday,MEMBER_RATING,OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,LATITUDE,LONGITUDE,GMTOFF,DSTOFF,TIMEZONE,CC,REGION,LAST_CHANGED,LEID,EUID,NOTES,TAGS\n' +
      'zoe@example.com,Zoë,Brown,,,,3,"2024-03-01 10:00:00",,,,,,,,,,,"2024-03-02 11:00:00",123,abc,,"""vip"""\n',
    email: "zoe@example.com",
    data: { firstName: "Zoë", lastName: "Brown", memberRating: "3", optinTime: "2024-03-01 10:00:00", leid: "123", euid: "abc" },
  },
  {
    tool: "Brevo (Sendinblue)",
    csv: "CONTACT ID,EMAIL,FIRSTNAME,LASTNAME,SMS,DOUBLE_OPT-IN,OPT_IN\n42,ada@example.com,Ada,Lovelace,,Yes,yes\n",
    email: "ada@example.com",
    data: { contactId: "42", firstname: "Ada", lastname: "Lovelace", doubleOptIn: "Yes" },
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
    data: { firstName: "Eve", lastName: "Ng", unsubscribed: "false" },
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
