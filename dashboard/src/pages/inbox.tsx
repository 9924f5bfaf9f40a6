import { useEffect, useState } from "preact/hooks";
import { api, call, type Email, type Schemas } from "../api/client";
import { useList } from "../api/lists";
import { ActionButton } from "../components/actions";
import { downloadAnswer } from "../components/crm-files";
import { NamedLink, useNames } from "../components/crm-names";
import { DataTable } from "../components/data-table";
import { Loading, Messages, Page } from "../components/page";
import { MailFrame } from "../components/preview-pane";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";
import { Link } from "../router";

/**
 * The inbox: mail the project received (GET /inbound), newest first, and a message's page with the email it
 * answers above the reply (GET /inbound/{id}, GET /emails/{id}), its attachments and the raw message as downloads.
 */
type Inbound = Schemas["InboundMessage"];
type InboundDetail = Schemas["InboundMessageDetail"];

/**
 * The emails messages answer, by id. The API reads emails one at a time (no list by ids), so each answered email
 * is read once per session, whatever number of messages answer it, and kept here.
 */
const answered = new Map<string, Promise<Email | null>>();
/** At most READERS of those reads at a time, so a page of 50 messages does not send 50 requests at once. */
const READERS = 4;
let reading = 0;
const waiting: (() => void)[] = [];
async function inTurn<T>(read: () => Promise<T>): Promise<T> {
  while (reading >= READERS) await new Promise<void>((go) => waiting.push(go));
  reading++;
  try {
    return await read();
  } finally {
    reading--;
    waiting.shift()?.();
  }
}
function answeredEmail(id: string): Promise<Email | null> {
  let email = answered.get(id);
  if (!email) {
    email = inTurn(() => call(api.GET("/emails/{id}", { params: { path: { id } } }))).catch(() => {
      answered.delete(id); // read again next time
      return null;
    });
    answered.set(id, email);
  }
  return email;
}

/** The answered emails of `ids` (the distinct ones, read once each), as they arrive. */
function useAnswered(ids: (string | null)[]): Map<string, Email | null> {
  const [emails, setEmails] = useState(new Map<string, Email | null>());
  const key = [...new Set(ids.filter((id): id is string => id !== null))].sort().join(",");
  useEffect(() => {
    let live = true;
    for (const id of key ? key.split(",") : [])
      void answeredEmail(id).then((email) => live && setEmails((old) => (old.has(id) ? old : new Map(old).set(id, email))));
    return () => {
      live = false;
    };
  }, [key]);
  return emails;
}

/** "Ada Lovelace <ada@example.com>", or the address alone. */
const sender = (m: Inbound) => (m.fromName ? `${m.fromName} <${m.from ?? "unknown"}>` : (m.from ?? "(not parsed yet)"));

/** The start of the reply, on one line. */
function snippet(text: string | null): string {
  const line = (text ?? "").replace(/\s+/g, " ").trim();
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}

/** What a message answers: the email (its subject, to whom), or that it is linked to none. */
function Answers(props: { message: Inbound; emails: Map<string, Email | null> }) {
  const { emailId } = props.message;
  if (emailId === null) return <span class="inbox-unlinked">not linked</span>;
  const email = props.emails.get(emailId);
  if (email === undefined) return <>…</>;
  if (email === null) return <Link href={`/emails/${emailId}`}>an email</Link>;
  return (
    <>
      answers <Link href={`/emails/${email.id}`}>{email.subject}</Link> to {email.to}
    </>
  );
}

function AutoReplyMark() {
  return <span class="status status-auto-reply">Auto-reply</span>;
}

/** `/inbox`: every received message, or (from a campaign, an email or a contact) the ones of `?campaignId=` / `?emailId=` / `?contactId=`. */
export function InboxList() {
  const search = new URLSearchParams(location.search);
  const query = {
    emailId: search.get("emailId") ?? undefined,
    contactId: search.get("contactId") ?? undefined,
    campaignId: search.get("campaignId") ?? undefined,
  };
  const [hideAuto, setHideAuto] = useState(false);
  const list = useList("/inbound", { query });
  const campaigns = useNames("campaigns", !!query.campaignId);
  const emails = useAnswered(list.items.map((m) => m.emailId));
  const shown = hideAuto ? { ...list, items: list.items.filter((m) => !m.autoReply) } : list;
  return (
    <Page title="Inbox">
      {query.campaignId && (
        <p>
          Replies to the campaign <NamedLink kind="campaigns" id={query.campaignId} names={campaigns} />.
        </p>
      )}
      {query.emailId && (
        <p>
          Replies to <Link href={`/emails/${query.emailId}`}>{emails.get(query.emailId)?.subject ?? "an email"}</Link>.
        </p>
      )}
      {query.contactId && <FromContact id={query.contactId} />}
      <label class="inbox-filter">
        <input type="checkbox" checked={hideAuto} onChange={(e) => setHideAuto(e.currentTarget.checked)} /> Hide auto-replies
      </label>
      {list.total !== undefined && <p>{list.total} received</p>}
      <DataTable
        list={shown}
        empty={hideAuto && list.items.length > 0 ? "Only auto-replies here." : "No mail received yet."}
        columns={[
          {
            header: "From",
            cell: (m) => (
              <span class="inbox-from">
                {m.fromName && <strong>{m.fromName}</strong>} <span>{m.from ?? "(not parsed yet)"}</span>
              </span>
            ),
          },
          {
            header: "Message",
            cell: (m) => (
              <>
                <Link href={`/inbox/${m.id}`}>{m.subject || "(no subject)"}</Link> {m.autoReply && <AutoReplyMark />}
                <br />
                <small class="inbox-snippet">{snippet(m.strippedText)}</small>
              </>
            ),
          },
          { header: "Answers", cell: (m) => <Answers message={m} emails={emails} /> },
          { header: "Received", cell: (m) => when(m.createdAt) },
        ]}
      />
    </Page>
  );
}

/** "Mail from ada@example.com" above a list filtered by `?contactId=`. */
function FromContact(props: { id: string }) {
  const contact = useLoad(() => call(api.GET("/contacts/{id}", { params: { path: { id: props.id } } })), [props.id]);
  return (
    <p>
      Mail from <Link href={`/contacts/${props.id}`}>{contact.data?.email ?? "a contact"}</Link>.
    </p>
  );
}

const MATCH_TEXT: Record<Inbound["match"], string> = {
  TOKEN: "by its reply address",
  HEADERS: "by its In-Reply-To / References headers",
  NONE: "not linked to an email",
};

/** `/inbox/:id`: a received message, below the email it answers. */
export function InboxPage(props: { id: string }) {
  const state = useLoad(() => call(api.GET("/inbound/{id}", { params: { path: { id: props.id } } })), [props.id]);
  if (!state.data) return <Page title="Message">{<Loading state={state} />}</Page>;
  return <Message message={state.data} />;
}

function Message(props: { message: InboundDetail }) {
  const { message } = props;
  const action = useAction();
  const download = (n: number, name: string) => () =>
    downloadAnswer(api.GET("/inbound/{id}/attachments/{n}", { params: { path: { id: message.id, n } }, parseAs: "blob" }), name);
  const raw = () => downloadAnswer(api.GET("/inbound/{id}/raw", { params: { path: { id: message.id } }, parseAs: "blob" }), `${message.id}.eml`);
  return (
    <Page title={message.subject || "(no subject)"} actions={message.autoReply ? <AutoReplyMark /> : undefined}>
      <dl class="facts">
        <dt>From</dt>
        <dd>{message.contactId ? <Link href={`/contacts/${message.contactId}`}>{sender(message)}</Link> : sender(message)}</dd>
        <dt>To</dt>
        <dd>{message.to}</dd>
        <dt>Subject</dt>
        <dd>{message.subject || "(no subject)"}</dd>
        <dt>Date</dt>
        <dd>
          <time dateTime={message.createdAt}>{when(message.createdAt)}</time>
        </dd>
        <dt>Linked</dt>
        <dd>{MATCH_TEXT[message.match]}</dd>
        {message.autoReply && (
          <>
            <dt>Auto-reply</dt>
            <dd>An automatic answer (out of office, auto-reply or delivery report): not counted as a reply.</dd>
          </>
        )}
        {message.status !== "PARSED" && (
          <>
            <dt>Status</dt>
            <dd>{message.status === "RECEIVED" ? "Received, not read yet: reload in a moment." : "Could not be read."}</dd>
          </>
        )}
        {message.error && (
          <>
            <dt>Note</dt>
            <dd>{message.error}</dd>
          </>
        )}
      </dl>
      <h2>Thread</h2>
      {message.emailId ? <AnsweredEmail id={message.emailId} /> : <p>This message answers no email we sent (or we could not tell which).</p>}
      <article class="inbox-reply" aria-label="The reply">
        <h3>{message.fromName || message.from || "Reply"}</h3>
        <div class="inbox-text">{message.strippedText || message.text || "(empty)"}</div>
      </article>
      {message.text && (
        <details class="inbox-full">
          <summary>Full message text</summary>
          <div class="inbox-text">{message.text}</div>
        </details>
      )}
      {message.status === "PARSED" && <HtmlVersion id={message.id} />}
      <h2>Attachments</h2>
      <Messages error={action.error} />
      {message.attachments.length === 0 ? (
        <p>None.</p>
      ) : (
        <ul class="inbox-files">
          {message.attachments.map((a, n) => {
            const name = a.filename || `attachment-${n}`;
            return (
              <li>
                <ActionButton action={action} onClick={download(n, name)}>
                  Download {name}
                </ActionButton>{" "}
                <small>
                  {a.contentType}, {size(a.size)}
                </small>
              </li>
            );
          })}
        </ul>
      )}
      <p>
        <ActionButton action={action} onClick={raw}>
          Download raw message (.eml)
        </ActionButton>{" "}
        <small>{size(message.size)}, as received</small>
      </p>
    </Page>
  );
}

/** Bytes in B, KB or MB. */
function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 102.4) / 10} KB`;
  return `${Math.round(bytes / 104857.6) / 10} MB`;
}

/** The email a message answers: its subject (a link to its page), when it was sent, to whom, and its campaign. */
function AnsweredEmail(props: { id: string }) {
  const state = useLoad(() => answeredEmail(props.id), [props.id]);
  const campaigns = useNames("campaigns", !!state.data?.campaignId);
  if (state.loading) return <Loading state={state} />;
  const email = state.data;
  if (!email)
    return (
      <p>
        In answer to <Link href={`/emails/${props.id}`}>an email</Link> that is no longer stored.
      </p>
    );
  return (
    <article class="inbox-answered" aria-label="The email it answers">
      <p class="inbox-label">In answer to</p>
      <h3>
        <Link href={`/emails/${email.id}`}>{email.subject}</Link>
      </h3>
      <p>
        Sent {when(email.sentAt ?? email.createdAt)} to {email.contactId ? <Link href={`/contacts/${email.contactId}`}>{email.to}</Link> : email.to}
        {email.campaignId && (
          <>
            {" "}
            · campaign <NamedLink kind="campaigns" id={email.campaignId} names={campaigns} />
          </>
        )}
      </p>
    </article>
  );
}

/** An email's replies (GET /emails/{id}/replies), for the email's page. */
export function EmailReplies(props: { emailId: string }) {
  const list = useList("/emails/{id}/replies", { path: { id: props.emailId }, query: { limit: 20 } });
  return (
    <DataTable
      list={list}
      empty="No replies."
      columns={[
        {
          header: "From",
          cell: (m) => sender(m),
        },
        {
          header: "Reply",
          cell: (m) => (
            <>
              <Link href={`/inbox/${m.id}`}>{m.subject || "(no subject)"}</Link> {m.autoReply && <AutoReplyMark />}
              <br />
              <small class="inbox-snippet">{snippet(m.strippedText)}</small>
            </>
          ),
        },
        { header: "Received", cell: (m) => when(m.createdAt) },
      ]}
    />
  );
}

/**
 * The message's HTML part (GET /inbound/{id}/html), fetched when opened and shown only in the sandboxed
 * frame (no script, no same origin): it is the sender's, untrusted. A message without one says so.
 */
function HtmlVersion(props: { id: string }) {
  const [state, setState] = useState<{ html: string } | { none: string } | null>(null);
  const load = async () => {
    if (state) return;
    const { data, response } = await api.GET("/inbound/{id}/html", { params: { path: { id: props.id } }, parseAs: "text" });
    if (typeof data === "string" && response.ok) setState({ html: data });
    else setState({ none: response.status === 404 ? "This message has no HTML version." : `The HTML version could not be read (HTTP ${response.status}).` });
  };
  return (
    <details class="inbox-full" onToggle={(e) => (e.currentTarget as HTMLDetailsElement).open && void load()}>
      <summary>HTML version</summary>
      {state === null ? null : "html" in state ? <MailFrame title="Received message (HTML)" html={state.html} /> : <p>{state.none}</p>}
    </details>
  );
}
