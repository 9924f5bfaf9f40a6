import { useState } from "preact/hooks";
import { api, call, type Email } from "../api/client";
import { NamedLink, useNames } from "../components/crm-names";
import { ListPage } from "../components/data-table";
import { Choice, Loading, Page, Status } from "../components/page";
import { MailFrame } from "../components/preview-pane";
import { EmailReplies } from "./inbox";
import { withoutOpenPixel } from "../mail-html";
import { when } from "../format";
import { useLoad } from "../hooks";
import { Link } from "../router";

const STATUSES = ["QUEUED", "SENDING", "SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED"] as const;

/** What an email was sent as: its campaign, else its template, by name (one list request per kind for the page). */
function SentAs(props: { email: Email; campaigns: Map<string, string> | null; templates: Map<string, string> | null }) {
  const { email } = props;
  if (email.campaignId) return <NamedLink kind="campaigns" id={email.campaignId} names={props.campaigns} />;
  if (email.templateId) return <NamedLink kind="templates" id={email.templateId} names={props.templates} />;
  return <>—</>;
}

export function EmailList() {
  const campaignId = new URLSearchParams(location.search).get("campaignId") ?? undefined;
  const [status, setStatus] = useState<Email["status"] | "">("");
  const campaigns = useNames("campaigns");
  const templates = useNames("templates");
  return (
    <ListPage
      path="/emails"
      params={{ query: { campaignId, status: status || undefined } }}
      columns={[
        { header: "To", cell: (e) => (e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.to}</Link> : e.to) },
        { header: "Subject", cell: (e) => e.subject, link: true },
        { header: "Campaign or template", cell: (e) => <SentAs email={e} campaigns={campaigns} templates={templates} /> },
        { header: "Status", cell: (e) => <Status value={e.status} /> },
        { header: "Created", cell: (e) => when(e.createdAt) },
      ]}
    >
      {campaignId && (
        <p>
          Emails of the campaign <NamedLink kind="campaigns" id={campaignId} names={campaigns} />.
        </p>
      )}
      <Choice label="Status" any="Any" options={STATUSES} value={status} onChange={setStatus} />
    </ListPage>
  );
}

/** What the page says about the message: the HTML as sent (GET /emails/{id} `html`), or why there is none. */
function messageNote(email: Email, html: string | null): string {
  if (html === null) return "The HTML of this email is no longer kept (EMAIL_HTML_RETENTION_DAYS after sending, 30 days by default).";
  if (email.status === "QUEUED" || email.status === "SENDING") return "Not sent yet: the HTML as it will go out, before open and click tracking is added.";
  if (email.status === "FAILED" && !email.sentAt) return "Not sent: the HTML it would have been sent with.";
  return "The HTML as it was sent (variables filled, tracking links applied).";
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
  const state = useLoad(() => call(api.GET("/emails/{id}", { params: { path: { id: props.id } } })), [props.id]);
  const campaigns = useNames("campaigns", !!state.data?.campaignId);
  const templates = useNames("templates", !!state.data?.templateId);
  if (!state.data) return <Page title="Email">{<Loading state={state} />}</Page>;
  const email = state.data;
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
              <NamedLink kind="campaigns" id={email.campaignId} names={campaigns} />
            </dd>
          </>
        )}
        {email.templateId && (
          <>
            <dt>Template</dt>
            <dd>
              <NamedLink kind="templates" id={email.templateId} names={templates} />
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
      <p>{messageNote(email, email.html)}</p>
      {email.html !== null && <MailFrame title="Sent message" html={withoutOpenPixel(email.html)} />}
      <h2>Replies</h2>
      <EmailReplies emailId={email.id} />
    </Page>
  );
}
