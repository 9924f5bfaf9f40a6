import { useEffect, useMemo, useState } from "preact/hooks";
import { api, call, type Campaign, type CampaignStats, type Condition, type Contact, type Email, type Segment, type Template } from "../api/client";
import { ActionForm, FormActions, ConfirmButton } from "../components/actions";
import { CampaignChart, campaignSeries } from "../components/chart";
import { ConditionBuilder, emptyCondition } from "../components/conditions";
import { type Column, ListPage } from "../components/data-table";
import { Field, Loading, Messages, Page, Status } from "../components/page";
import { PreviewPane } from "../components/preview-pane";
import { ContactPicker } from "../editor-contact-picker";
import { BodyEditor } from "../editor-visual";
import { when } from "../format";
import { useAction, useLoad } from "../hooks";
import { SAMPLE_DATA } from "../preview";
import { Link, navigate } from "../router";

/** The project's segments (first 100) by id, for showing a campaign's segment by name. */
function useSegments() {
  return useLoad(async () => (await call(api.GET("/segments", { params: { query: { limit: 100 } } }))).data.items, []);
}

/** The project's topics (at most 100), for the composer's topic choice. */
function useTopics() {
  return useLoad(async () => (await call(api.GET("/topics", { params: { query: { limit: 100 } } }))).data.items, []);
}

function audienceText(c: Campaign, segments: Segment[] | undefined): string {
  if (c.audienceType === "ALL") return "all subscribed contacts";
  if (c.audienceType === "FILTERED") return "contacts matching a condition";
  const segment = segments?.find((s) => s.id === c.segmentId);
  return segment ? `segment ${segment.name}` : "a segment";
}

export function CampaignList() {
  const segments = useSegments();
  // The list's columns: the name links to the campaign; the audience names its segment.
  const columns: Column<Campaign>[] = [
    { header: "Name", cell: (c) => c.name, link: true },
    { header: "Status", cell: (c) => <Status value={c.status} /> },
    { header: "Audience", cell: (c) => audienceText(c, segments.data) },
    { header: "Sent or scheduled", cell: (c) => when(c.sentAt ?? c.scheduledAt) },
  ];
  return <ListPage path="/campaigns" create columns={columns} />;
}

export function CampaignPage(props: { id: string }) {
  const state = useLoad(
    async () => (props.id === "new" ? null : (await call(api.GET("/campaigns/{id}", { params: { path: { id: props.id } } }))).data),
    [props.id],
  );
  // Scheduled or sent from the bottom of the editor: the report opens at its top, not where the editor was scrolled.
  const status = state.data?.status;
  useEffect(() => {
    if (status && status !== "DRAFT") window.scrollTo(0, 0);
  }, [status]);
  if (props.id === "new") return <NewCampaign />;
  if (!state.data) return <Page title="Campaign">{<Loading state={state} />}</Page>;
  const campaign = state.data;
  if (campaign.status === "DRAFT") return <CampaignEditor campaign={campaign} onChange={state.reload} />;
  return <CampaignReport campaign={campaign} onChange={state.reload} />;
}

type Draft = {
  name: string;
  subject: string;
  body: string;
  from: string;
  fromName: string;
  replyTo: string;
  audienceType: Campaign["audienceType"];
  segmentId: string;
  audienceFilter: Condition;
  topicId: string;
};

const STARTER_BODY = '<h1>Hello {{firstName ?? there}}</h1>\n<p>Here is what is new this month.</p>\n<p><a href="https://example.com">Read more</a></p>';

function draftOf(c?: Campaign): Draft {
  return {
    name: c?.name ?? "",
    subject: c?.subject ?? "",
    body: c?.body ?? STARTER_BODY,
    from: c?.from ?? "",
    fromName: c?.fromName ?? "",
    replyTo: c?.replyTo ?? "",
    audienceType: c?.audienceType ?? "ALL",
    segmentId: c?.segmentId ?? "",
    audienceFilter: c?.audienceFilter ?? emptyCondition(),
    topicId: c?.topicId ?? "",
  };
}

/** A new draft from a template: its subject, body and sender (the project's default sender when it has none). */
function draftFromTemplate(t: Template): Draft {
  return { ...draftOf(), subject: t.subject, body: t.body, from: t.from ?? "", fromName: t.fromName ?? "", replyTo: t.replyTo ?? "" };
}

function payload(d: Draft) {
  return {
    name: d.name,
    subject: d.subject,
    body: d.body,
    from: d.from,
    fromName: d.fromName || null,
    // The document types replyTo as a string (no null), so an empty field leaves it unchanged.
    replyTo: d.replyTo || undefined,
    audienceType: d.audienceType,
    segmentId: d.audienceType === "SEGMENT" ? d.segmentId || null : null,
    audienceFilter: d.audienceType === "FILTERED" ? d.audienceFilter : null,
    topicId: d.topicId || null,
  };
}

/** A new campaign starts from one of the project's templates (by name) or blank. */
function NewCampaign() {
  const [start, setStart] = useState<Draft | null>(null);
  const templates = useLoad(async () => (await call(api.GET("/templates", { params: { query: { limit: 100 } } }))).data.items, []);
  if (start) return <CampaignEditor start={start} />;
  return (
    <Page title="New campaign">
      <h2>Start from</h2>
      <div class="starts">
        <button type="button" class="start" onClick={() => setStart(draftOf())}>
          <strong>Start blank</strong>
          <span>A short starter body to edit</span>
        </button>
        {(templates.data ?? []).map((t) => (
          <button type="button" class="start" onClick={() => setStart(draftFromTemplate(t))}>
            <strong>{t.name}</strong>
            <span>{t.subject}</span>
          </button>
        ))}
      </div>
      <Loading state={templates} />
      {templates.data?.length === 0 && <p>No templates yet: start blank, or make one under Templates.</p>}
    </Page>
  );
}

/** Compose a new campaign or edit a draft: audience, content in the visual or HTML editor, a live preview as a contact, test, schedule, send. */
function CampaignEditor(props: { campaign?: Campaign; start?: Draft; onChange?: () => void }) {
  const { campaign } = props;
  const [draft, setDraft] = useState<Draft>(() => props.start ?? draftOf(campaign));
  const [sample, setSample] = useState(SAMPLE_DATA);
  const [contact, setContact] = useState<Contact | null>(null);
  const action = useAction();
  const segments = useSegments();
  const topics = useTopics();
  const senders = useLoad(async () => {
    const domains = (await call(api.GET("/domains", { params: { query: { limit: 100, status: "VERIFIED" } } }))).data.items;
    return domains.map((d) => `hello@${d.domain}`);
  }, []);
  useEffect(() => {
    if (!draft.from && senders.data?.[0]) setDraft((d) => ({ ...d, from: senders.data![0] }));
  }, [senders.data]);
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }));
  const choose = (c: Contact | null) => {
    setContact(c);
    setSample(c ? JSON.stringify(c.data ?? {}, null, 2) : SAMPLE_DATA);
  };

  const save = async (): Promise<Campaign> => {
    if (campaign) return (await call(api.PATCH("/campaigns/{id}", { params: { path: { id: campaign.id } }, body: payload(draft) }))).data;
    const created = (await call(api.POST("/campaigns", { body: payload(draft) }))).data;
    navigate(`/campaigns/${created.id}`);
    return created;
  };
  const saveDraft = async () => {
    await save();
    props.onChange?.();
    return "Draft saved.";
  };

  return (
    <Page title={campaign ? `Campaign: ${campaign.name}` : "New campaign"} actions={campaign && <Status value={campaign.status} />}>
      <ActionForm class="stack" action={action} onSubmit={saveDraft}>
        <div class="row">
          <Field label="Name">{(id) => <input id={id} required value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} />}</Field>
          <Field label="Subject">{(id) => <input id={id} required value={draft.subject} onInput={(e) => set({ subject: e.currentTarget.value })} />}</Field>
        </div>
        <div class="row">
          <Field label="From address" hint="On a verified domain">
            {(id) => (
              <>
                <input id={id} type="email" required list={`${id}-senders`} value={draft.from} onInput={(e) => set({ from: e.currentTarget.value })} />
                <datalist id={`${id}-senders`}>
                  {(senders.data ?? []).map((s) => (
                    <option value={s} />
                  ))}
                </datalist>
              </>
            )}
          </Field>
          <Field label="From name">{(id) => <input id={id} value={draft.fromName} onInput={(e) => set({ fromName: e.currentTarget.value })} />}</Field>
          <Field label="Reply-to">
            {(id) => <input id={id} type="email" value={draft.replyTo} onInput={(e) => set({ replyTo: e.currentTarget.value })} />}
          </Field>
        </div>
        <fieldset>
          <legend>Audience</legend>
          <div class="radios">
            {(
              [
                ["ALL", "All subscribed contacts"],
                ["SEGMENT", "A segment"],
                ["FILTERED", "Contacts matching a condition"],
              ] as const
            ).map(([value, label]) => (
              <label>
                <input type="radio" name="audience" value={value} checked={draft.audienceType === value} onChange={() => set({ audienceType: value })} />{" "}
                {label}
              </label>
            ))}
          </div>
          {draft.audienceType === "SEGMENT" && (
            <Field label="Segment">
              {(id) => (
                <select id={id} required value={draft.segmentId} onChange={(e) => set({ segmentId: e.currentTarget.value })}>
                  <option value="">Choose a segment</option>
                  {(segments.data ?? []).map((s) => (
                    <option value={s.id}>
                      {s.name} ({s.memberCount} contacts)
                    </option>
                  ))}
                </select>
              )}
            </Field>
          )}
          {draft.audienceType === "FILTERED" && (
            <ConditionBuilder label="Audience condition" value={draft.audienceFilter} onChange={(audienceFilter) => set({ audienceFilter })} />
          )}
          {(topics.data?.length ?? 0) > 0 && (
            <Field label="Topic" hint="Only contacts opted in to the topic get it; its unsubscribe link opts out of this topic only.">
              {(id) => (
                <select id={id} value={draft.topicId} onChange={(e) => set({ topicId: e.currentTarget.value })}>
                  <option value="">No topic</option>
                  {(topics.data ?? []).map((t) => (
                    <option value={t.id}>{t.name}</option>
                  ))}
                </select>
              )}
            </Field>
          )}
        </fieldset>
        <BodyEditor
          value={draft.body}
          onChange={(body) => set({ body })}
          hint="{{variables}} fill from each contact's data; an unsubscribe link is added when the body has no {{unsubscribeUrl}}."
        />
        <FormActions
          action={action}
          submit={campaign ? "Save draft" : "Create draft"}
          remove={campaign && { path: "/campaigns/{id}", id: campaign.id, question: `Delete the draft "${campaign.name}"? This cannot be undone.` }}
        />
      </ActionForm>
      <div class="split">
        <PreviewPane subject={draft.subject} body={draft.body} sample={sample} onSample={setSample} email={contact?.email}>
          <ContactPicker chosen={contact} onChoose={choose} />
        </PreviewPane>
        {campaign ? (
          <SendPanels campaign={campaign} name={draft.name} contact={contact} action={action} save={save} onChange={props.onChange} />
        ) : (
          <p>Create the draft to send a test, schedule it or send it.</p>
        )}
      </div>
    </Page>
  );
}

/** A draft's test send (as the chosen contact), schedule and send now; each saves the draft first. */
function SendPanels(props: {
  campaign: Campaign;
  name: string;
  contact: Contact | null;
  action: ReturnType<typeof useAction>;
  save: () => Promise<unknown>;
  onChange?: () => void;
}) {
  const { campaign, action, contact } = props;
  const [testTo, setTestTo] = useState("");
  const [scheduleAt, setScheduleAt] = useState("");
  const path = { path: { id: campaign.id } };
  const sendTest = async () => {
    await props.save();
    await call(api.POST("/campaigns/{id}/test", { params: path, body: { email: testTo, ...(contact ? { contactId: contact.id } : {}) } }));
    return contact ? `Test email sent to ${testTo} with the data of ${contact.email}.` : `Test email sent to ${testTo}.`;
  };
  const send = async (body: { scheduledFor?: string }) => {
    await props.save();
    await call(api.POST("/campaigns/{id}/send", { params: path, body }));
    props.onChange?.();
  };
  return (
    <div class="panels stacked">
      <ActionForm class="panel" action={action} onSubmit={sendTest}>
        <h2>Test send</h2>
        <Field label="Test recipient" hint={contact ? `Rendered with the data of ${contact.email}` : "Rendered with this address's contact data, if any"}>
          {(id) => <input id={id} type="email" required value={testTo} onInput={(e) => setTestTo(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={action.busy}>
          Send test
        </button>
      </ActionForm>
      <ActionForm class="panel" action={action} onSubmit={() => send({ scheduledFor: new Date(scheduleAt).toISOString() })}>
        <h2>Schedule</h2>
        <Field label="Send at (your time zone)">
          {(id) => <input id={id} type="datetime-local" required value={scheduleAt} onInput={(e) => setScheduleAt(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={action.busy}>
          Schedule
        </button>
      </ActionForm>
      <div class="panel">
        <h2>Send now</h2>
        <p>Sends to the audience as saved.</p>
        <ConfirmButton
          label="Send campaign"
          danger={false}
          question={`Send "${props.name}" to its audience now? Sent mail cannot be recalled.`}
          confirmLabel="Send now"
          disabled={action.busy}
          onConfirm={() => void action.run(() => send({}))}
        />
      </div>
    </div>
  );
}

/** At most this many of a campaign's emails are read for its chart (100 per request). */
const CHART_EMAIL_LIMIT = 2000;

async function campaignEmails(campaignId: string): Promise<{ emails: Email[]; complete: boolean }> {
  const emails: Email[] = [];
  let cursor: string | undefined;
  while (emails.length < CHART_EMAIL_LIMIT) {
    const page = (await call(api.GET("/emails", { params: { query: { campaignId, limit: 100, cursor } } }))).data;
    emails.push(...page.items);
    if (!page.hasMore || !page.nextCursor) return { emails, complete: true };
    cursor = page.nextCursor;
  }
  return { emails, complete: false };
}

const STAT_ROWS: [keyof CampaignStats, string, (keyof CampaignStats)?][] = [
  ["totalRecipients", "Recipients"],
  ["sentCount", "Sent"],
  ["deliveredCount", "Delivered", "deliveryRate"],
  ["openedCount", "Opened", "openRate"],
  ["clickedCount", "Clicked", "clickRate"],
  ["bouncedCount", "Bounced", "bounceRate"],
  ["complainedCount", "Complaints", "complaintRate"],
  ["unsubscribedCount", "Unsubscribed", "unsubscribeRate"],
  ["repliedCount", "Replied", "replyRate"],
  ["failedCount", "Failed"],
];

/** The report's headline: these counts as a share of the recipients. */
const HEADLINE: [keyof CampaignStats, string][] = [
  ["deliveredCount", "Delivered"],
  ["openedCount", "Opened"],
  ["clickedCount", "Clicked"],
  ["bouncedCount", "Bounced"],
  ["unsubscribedCount", "Unsubscribed"],
];

/** `part` of `whole` in percent, one decimal ("0%" of nobody). */
const percent = (part: number, whole: number) => `${whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0}%`;

/** A scheduled, sending or sent campaign: its numbers, a chart over time, its content; cancel while scheduled. */
function CampaignReport(props: { campaign: Campaign; onChange: () => void }) {
  const { campaign } = props;
  const [tick, setTick] = useState(0);
  const stats = useLoad(async () => (await call(api.GET("/campaigns/{id}/stats", { params: { path: { id: campaign.id } } }))).data, [campaign.id, tick]);
  const emails = useLoad(() => campaignEmails(campaign.id), [campaign.id, tick]);
  const action = useAction();
  const [sample, setSample] = useState(SAMPLE_DATA);
  // While mail goes out, numbers move: refresh every few seconds.
  useEffect(() => {
    if (campaign.status !== "SENDING" && campaign.status !== "SENT") return;
    const timer = setInterval(() => setTick((t) => t + 1), campaign.status === "SENDING" ? 2000 : 10_000);
    return () => clearInterval(timer);
  }, [campaign.status]);
  useEffect(() => {
    if (campaign.status === "SENDING" && tick > 0) props.onChange();
  }, [tick]);
  const series = useMemo(() => campaignSeries(emails.data?.emails ?? []), [emails.data]);
  const segments = useSegments();
  const s = stats.data;
  return (
    <Page title={`Campaign: ${campaign.name}`} actions={<Status value={campaign.status} />}>
      <p>
        {campaign.status === "SCHEDULED" ? `Scheduled for ${when(campaign.scheduledAt)}` : `Sent ${when(campaign.sentAt)}`} · from {campaign.from} · to{" "}
        {audienceText(campaign, segments.data)}
      </p>
      {campaign.status === "SCHEDULED" && (
        <>
          <Messages error={action.error} />
          <ConfirmButton
            label="Cancel schedule"
            question="Cancel this scheduled send? The campaign goes back to a draft."
            confirmLabel="Cancel the send"
            onConfirm={() =>
              void action.run(async () => {
                await call(api.POST("/campaigns/{id}/cancel", { params: { path: { id: campaign.id } } }));
                props.onChange();
              })
            }
          />
        </>
      )}
      <h2>Stats</h2>
      {!s && <Loading state={stats} />}
      {s && (
        <dl class="headline" aria-label={`Of ${s.totalRecipients} recipients`}>
          {HEADLINE.map(([count, label]) => (
            <div>
              <dt>{label}</dt>
              <dd data-rate={count}>{percent(s[count], s.totalRecipients)}</dd>
              <dd class="headline-count">
                {s[count]} of {s.totalRecipients}
              </dd>
            </div>
          ))}
        </dl>
      )}
      {s && (
        <dl class="stats">
          {STAT_ROWS.map(([count, label, rate]) => (
            <div>
              <dt>{label}</dt>
              <dd data-stat={count}>
                {s[count]}
                {rate && <small> ({s[rate]}%)</small>}
              </dd>
            </div>
          ))}
        </dl>
      )}
      <h2>Over time</h2>
      {series.x.length > 0 ? <CampaignChart series={series} /> : <p>Nothing sent yet.</p>}
      {emails.data && !emails.data.complete && <p>The chart shows the first {CHART_EMAIL_LIMIT} recipients; the numbers above count all.</p>}
      <h2>Content</h2>
      <PreviewPane subject={campaign.subject} body={campaign.body} sample={sample} onSample={setSample} />
      <p>
        <Link href={`/emails?campaignId=${campaign.id}`}>This campaign's emails</Link> · <Link href={`/inbox?campaignId=${campaign.id}`}>Its replies</Link>
      </p>
    </Page>
  );
}
