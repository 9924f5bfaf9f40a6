import { useState } from "preact/hooks";
import { api, call, type Email } from "../api/client";
import { ListPage } from "../components/data-table";
import { Choice, Loading, Page, Status } from "../components/page";
import { MailFrame } from "../components/preview-pane";
import { when } from "../format";
import { useLoad } from "../hooks";
import { renderPreview } from "../preview";
import { Link } from "../router";

const STATUSES = ["QUEUED", "SENDING", "SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED"] as const;

export function EmailList() {
  const campaignId = new URLSearchParams(location.search).get("campaignId") ?? undefined;
  const [status, setStatus] = useState<Email["status"] | "">("");
  return (
    <ListPage
      path="/emails"
      params={{ query: { campaignId, status: status || undefined } }}
      columns={[
        { header: "To", cell: (e) => e.to },
        { header: "Subject", cell: (e) => e.subject, link: true },
        { header: "Status", cell: (e) => <Status value={e.status} /> },
        { header: "Created", cell: (e) => when(e.createdAt) },
      ]}
    >
      {campaignId && <p>Emails of one campaign.</p>}
      <Choice label="Status" any="Any" options={STATUSES} value={status} onChange={setStatus} />
    </ListPage>
  );
}

/**
 * The API keeps a sent email's status and timestamps, not its HTML (GET /emails/{id}
 * has no body). The message is shown rendered again from its campaign or template
 * with the contact's data, in a sandboxed frame, and says so.
 */
async function rendered(email: Email): Promise<{ html: string; source: string } | null> {
  const contact = email.contactId ? await call(api.GET("/contacts/{id}", { params: { path: { id: email.contactId } } })).catch(() => null) : null;
  const data = JSON.stringify(contact?.data ?? {});
  if (email.campaignId) {
    const campaign = (await call(api.GET("/campaigns/{id}", { params: { path: { id: email.campaignId } } }))).data;
    return { html: (await renderPreview(campaign.subject, campaign.body, data, email.to)).html, source: "its campaign" };
  }
  if (email.templateId) {
    const template = await call(api.GET("/templates/{id}", { params: { path: { id: email.templateId } } }));
    return { html: (await renderPreview(template.subject, template.body, data, email.to)).html, source: "its template" };
  }
  return null;
}

const TIMES: [keyof Email, string][] = [
  ["queuedAt", "Queued"],
  ["sentAt", "Sent"],
  ["deliveredAt", "Delivered"],
  ["openedAt", "Opened"],
  ["clickedAt", "Clicked"],
  ["bouncedAt", "Bounced"],
  ["complainedAt", "Complained"],
  ["failedAt", "Failed"],
];

export function EmailPage(props: { id: string }) {
  const state = useLoad(async () => {
    const email = await call(api.GET("/emails/{id}", { params: { path: { id: props.id } } }));
    return { email, message: await rendered(email).catch(() => null) };
  }, [props.id]);
  if (!state.data) return <Page title="Email">{<Loading state={state} />}</Page>;
  const { email, message } = state.data;
  return (
    <Page title={email.subject} actions={<Status value={email.status} />}>
      <dl class="facts">
        <dt>To</dt>
        <dd>{email.contactId ? <Link href={`/contacts/${email.contactId}`}>{email.to}</Link> : email.to}</dd>
        <dt>From</dt>
        <dd>{email.fromName ? `${email.fromName} <${email.from}>` : email.from}</dd>
        {email.campaignId && (
          <>
            <dt>Campaign</dt>
            <dd>
              <Link href={`/campaigns/${email.campaignId}`}>{email.campaignId}</Link>
            </dd>
          </>
        )}
        <dt>Attempts</dt>
        <dd>{email.attempts}</dd>
        <dt>Opens / clicks</dt>
        <dd>
          {email.opens} / {email.clicks}
        </dd>
        {email.error && (
          <>
            <dt>Error</dt>
            <dd>{email.error}</dd>
          </>
        )}
        {TIMES.filter(([k]) => email[k]).map(([k, label]) => (
          <>
            <dt>{label}</dt>
            <dd>{when(email[k] as string)}</dd>
          </>
        ))}
      </dl>
      <h2>Message</h2>
      {message ? (
        <>
          <p>Rendered from {message.source} with the contact's current data.</p>
          <MailFrame title="Rendered message" html={message.html} />
        </>
      ) : (
        <p>This email was sent with its own body, which the API does not return.</p>
      )}
    </Page>
  );
}
