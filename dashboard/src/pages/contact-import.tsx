import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas } from "../api/client";
import { useList } from "../api/lists";
import { type CsvPreview, readCsv } from "../components/crm-csv-read";
import { csvOf, saveBlob, today } from "../components/crm-files";
import { type ColumnMap, type ColumnType, columnsToSend, defaultMapping, mappingProblem, type Target } from "../components/crm-import-plan";
import { DataTable } from "../components/data-table";
import { Field, Messages, Page, Status } from "../components/page";
import { when } from "../format";
import { messageOf } from "../hooks";
import { Link } from "../router";

/** The job as the server answers it (its progress, counts, duplicates, `subscribedDefault` and row errors). */
type Job = Schemas["ContactImport"];

const TARGETS: [Target, string][] = [
  ["email", "Email address"],
  ["subscribed", "Subscribed"],
  ["data", "Data key"],
  ["ignore", "Ignore"],
];
const TYPES: [ColumnType, string][] = [
  ["text", "Text"],
  ["number", "Number"],
  ["boolean", "Boolean (true/false)"],
  ["date", "Date"],
];
const PREVIEW_ROWS = 5;
const POLL_MS = 1000;
const finished = (job: Job) => job.status === "COMPLETED" || job.status === "FAILED";

/**
 * Contacts from a CSV file as other tools export it: the file is read in the browser for a mapping step
 * (its header, a preview, each column's target and type as the server would pick them), the user chooses
 * the subscription of rows without one, the raw file goes to `POST /contacts/imports`, and the job is
 * polled for its progress and result.
 */
export function ContactImport() {
  const [file, setFile] = useState<File | null>(null);
  const [preview, setPreview] = useState<CsvPreview | null>(null);
  const [defaults, setDefaults] = useState<ColumnMap[]>([]);
  const [mapping, setMapping] = useState<ColumnMap[]>([]);
  const [subscribe, setSubscribe] = useState<"true" | "false" | "">("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [job, setJob] = useState<Job | null>(null);

  const choose = async (chosen: File | undefined) => {
    setError(null);
    setPreview(null);
    setJob(null);
    setFile(chosen ?? null);
    if (!chosen) return;
    try {
      const read = await readCsv(chosen);
      const plan = defaultMapping(read.header, read.rows);
      setPreview(read);
      setDefaults(plan);
      setMapping(plan);
    } catch (err) {
      setError(messageOf(err));
    }
  };

  const edit = (i: number, change: Partial<ColumnMap>) => setMapping((old) => old.map((m, j) => (j === i ? { ...m, ...change } : m)));
  const problem = preview ? mappingProblem(mapping) : null;
  const subscribedColumn = mapping.some((m) => m.to === "subscribed");

  const upload = async () => {
    if (!file || problem || subscribe === "") return;
    setBusy(true);
    setError(null);
    try {
      const columns = columnsToSend(mapping, defaults);
      const created = await call(
        api.POST("/contacts/imports", {
          params: { query: { subscribed: subscribe === "true", columns: columns && JSON.stringify(columns) } },
          // The file as it is, streamed from disk (not read into a string).
          body: file as unknown as string,
          bodySerializer: (body) => body,
          headers: { "Content-Type": "text/csv" },
        }),
      );
      setJob(created);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  // The job's progress, read again every second until it is COMPLETED or FAILED.
  useEffect(() => {
    if (!job || finished(job)) return;
    const timer = setTimeout(async () => {
      try {
        setJob(await call(api.GET("/contacts/imports/{id}", { params: { path: { id: job.id } } })));
      } catch (err) {
        setError(messageOf(err));
      }
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [job]);

  const restart = () => {
    setFile(null);
    setPreview(null);
    setJob(null);
    setSubscribe("");
    setError(null);
  };

  return (
    <Page
      title="Import contacts"
      actions={
        <Link class="button" href="/contacts">
          Back to contacts
        </Link>
      }
    >
      <p class="crm-consent">
        Only import people who agreed to hear from you. A CSV file exported from Mailchimp, Brevo, SendGrid, Klaviyo, Kit, Resend, Loops or Plunk imports as it
        is: its first row names the columns, one of them the email address.
      </p>
      {!job && (
        <>
          <h2>1. Choose a file</h2>
          <Field label="CSV file" hint="UTF-8, up to 50 MB. Nothing is sent until you press Import.">
            {(id) => <input id={id} type="file" accept=".csv,text/csv" onChange={(e) => void choose(e.currentTarget.files?.[0])} />}
          </Field>
        </>
      )}
      <Messages error={error} />
      {preview && !job && (
        <>
          <h2>2. Map the columns</h2>
          <p>
            {preview.complete
              ? `${preview.rows.length} ${preview.rows.length === 1 ? "row" : "rows"} in ${file?.name}.`
              : `The first ${preview.rows.length} rows of ${file?.name} (a large file: the server reads all of it).`}{" "}
            Each column goes to the contact's email, its subscription, a data key, or nowhere. Types are guessed from the values.
          </p>
          <Preview preview={preview} />
          <div class="crm-mapping">
            {mapping.map((m, i) => (
              <MappingRow column={m} fallback={defaults[i]} samples={samplesOf(preview, i)} onChange={(change) => edit(i, change)} />
            ))}
          </div>
          <div class="actions">
            <button type="button" onClick={() => setMapping(defaults)} disabled={columnsToSend(mapping, defaults) === undefined}>
              Reset the mapping
            </button>
          </div>
          <h2>3. Subscription</h2>
          <fieldset>
            <legend>{subscribedColumn ? "Rows without a subscribed value" : "Every imported contact"}</legend>
            <div class="crm-radios">
              <label>
                <input type="radio" name="subscribe" value="true" checked={subscribe === "true"} onChange={() => setSubscribe("true")} /> Subscribe them — they
                agreed to receive marketing from you
              </label>
              <label>
                <input type="radio" name="subscribe" value="false" checked={subscribe === "false"} onChange={() => setSubscribe("false")} /> Leave them
                unsubscribed
              </label>
            </div>
            <small class="crm-hint">This applies to contacts already in your list too. Unsubscribed contacts get no campaigns.</small>
          </fieldset>
          <Messages error={problem} />
          <div class="actions">
            <button type="button" class="primary" disabled={busy || problem !== null || subscribe === ""} onClick={() => void upload()}>
              {busy ? "Uploading…" : "Import"}
            </button>
            {subscribe === "" && <small class="crm-hint">Choose a subscription above to import.</small>}
          </div>
        </>
      )}
      {job && <Progress job={job} preview={preview} onRestart={restart} />}
      {!preview && !job && <RecentImports onOpen={setJob} />}
    </Page>
  );
}

/** The project's last imports (GET /contacts/imports, newest first); `View` shows one's progress or result. */
function RecentImports(props: { onOpen: (job: Job) => void }) {
  const list = useList("/contacts/imports", { query: { limit: 10 } });
  return (
    <>
      <h2>Recent imports</h2>
      <DataTable
        list={list}
        empty="No imports yet."
        columns={[
          { header: "Started", cell: (j) => when(j.createdAt) },
          { header: "Status", cell: (j) => <Status value={j.status} /> },
          { header: "Rows", cell: (j) => j.total },
          { header: "Created", cell: (j) => j.created },
          { header: "Updated", cell: (j) => j.updated },
          { header: "Failed", cell: (j) => j.failed },
          { header: "Duplicates", cell: (j) => j.duplicates },
          {
            header: "Details",
            cell: (j) => (
              <button type="button" class="small" aria-label={`View the import of ${when(j.createdAt)}`} onClick={() => props.onOpen(j)}>
                View
              </button>
            ),
          },
        ]}
      />
    </>
  );
}

/** Up to three non-empty values of column `i`, as an example of what it holds. */
function samplesOf(preview: CsvPreview, i: number): string[] {
  const values: string[] = [];
  for (const row of preview.rows) {
    const v = (row[i] ?? "").trim();
    if (v !== "" && !values.includes(v)) values.push(v);
    if (values.length === 3) break;
  }
  return values;
}

/** The header and the first rows of the file, as read. */
function Preview(props: { preview: CsvPreview }) {
  const { header, rows } = props.preview;
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region is focusable so it scrolls by keyboard.
    <section class="crm-scroll" aria-label="The file's first rows" tabIndex={0}>
      <table class="crm-preview">
        <thead>
          <tr>
            {header.map((h) => (
              <th scope="col">{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, PREVIEW_ROWS).map((row) => (
            <tr>
              {header.map((_, i) => (
                <td>{row[i] ?? ""}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** One column's target (and, for a data key, its key and type); the server's own choice is marked. */
function MappingRow(props: { column: ColumnMap; fallback: ColumnMap; samples: string[]; onChange: (change: Partial<ColumnMap>) => void }) {
  const { column: m, fallback } = props;
  const targets: [Target, string][] = fallback.to === "json" ? [...TARGETS, ["json", "Data (JSON object, merged)"]] : TARGETS;
  return (
    <fieldset class="crm-map">
      <legend>{m.header.trim() || "(unnamed column)"}</legend>
      <p class="crm-sample">{props.samples.length ? props.samples.join(" · ") : "(empty)"}</p>
      <div class="crm-map-fields">
        <Field label="Target">
          {(id) => (
            <select
              id={id}
              value={m.to}
              onChange={(e) => {
                const to = e.currentTarget.value as Target;
                props.onChange({
                  to,
                  key: m.key || fallback.key,
                  type: to === "data" && fallback.to === "data" ? fallback.type : to === "subscribed" ? "boolean" : m.type,
                });
              }}
            >
              {targets.map(([value, text]) => (
                <option value={value}>{text}</option>
              ))}
            </select>
          )}
        </Field>
        {m.to === "data" && (
          <>
            <Field label="Data key">{(id) => <input id={id} value={m.key} onInput={(e) => props.onChange({ key: e.currentTarget.value })} />}</Field>
            <Field label="Type">
              {(id) => (
                <select id={id} value={m.type} onChange={(e) => props.onChange({ type: e.currentTarget.value as ColumnType })}>
                  {TYPES.map(([value, text]) => (
                    <option value={value}>{text}</option>
                  ))}
                </select>
              )}
            </Field>
          </>
        )}
      </div>
    </fieldset>
  );
}

/** What rows without a subscribed value got. */
function subscriptionText(job: Job): string {
  const given = job.subscribedDefault;
  if (given === true) return "Rows without a subscribed value were subscribed.";
  if (given === false) return "Rows without a subscribed value were left unsubscribed.";
  return "Rows without a subscribed value: new contacts unsubscribed, existing ones kept their subscription.";
}

/** The job's progress bar while it runs, then its counts, its row errors and a CSV of them. */
function Progress(props: { job: Job; preview: CsvPreview | null; onRestart: () => void }) {
  const { job, preview } = props;
  const done = finished(job);
  const downloadErrors = () => {
    // With the whole file read, each error row comes with the row as it was in the file, to fix and import again.
    const withRows = preview?.complete === true;
    const rows: unknown[][] = [["row", "error", ...(withRows ? preview.header : [])]];
    for (const e of job.errors) rows.push([e.row, e.message, ...(withRows ? (preview.rows[e.row - 1] ?? []) : [])]);
    saveBlob(csvOf(rows), `import-errors-${today()}.csv`);
  };
  return (
    <section aria-labelledby="import-progress">
      <h2 id="import-progress">{done ? (job.status === "COMPLETED" ? "Import finished" : "Import failed") : "Importing…"}</h2>
      <div class="crm-progress" aria-live="polite">
        <progress
          aria-label="Import progress"
          max={Math.max(job.total, 1)}
          value={done && job.status === "COMPLETED" ? Math.max(job.total, 1) : job.processed}
        />
        <span data-testid="import-processed">
          {job.processed} of {job.total} rows processed
        </span>
      </div>
      {job.failureReason && (
        <p class="error" role="alert">
          {job.failureReason}
        </p>
      )}
      {done && (
        <>
          <dl class="stats">
            {(
              [
                ["created", "Created", job.created],
                ["updated", "Updated", job.updated],
                ["failed", "Failed", job.failed],
                ["duplicates", "Duplicates", job.duplicates],
              ] as const
            ).map(([key, label, value]) => (
              <div>
                <dt>{label}</dt>
                <dd data-result={key}>{value}</dd>
              </div>
            ))}
          </dl>
          <p>
            {subscriptionText(job)}
            {job.duplicates
              ? ` ${job.duplicates} ${job.duplicates === 1 ? "row repeated an email" : "rows repeated an email"} from earlier in the file: the last row won.`
              : ""}
          </p>
          {job.errors.length > 0 && (
            <>
              <h3>Rows not imported</h3>
              <div class="actions">
                <button type="button" onClick={downloadErrors}>
                  Download errors (CSV)
                </button>
              </div>
              {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region is focusable so it scrolls by keyboard. */}
              <section class="crm-scroll" aria-label="Rows not imported" tabIndex={0}>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Row</th>
                      <th scope="col">Error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {job.errors.map((e) => (
                      <tr>
                        <td>{e.row}</td>
                        <td>{e.message}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </section>
              {job.failed > job.errors.length && (
                <p>
                  The first {job.errors.length} of {job.failed} errors are listed.
                </p>
              )}
            </>
          )}
          <div class="actions">
            <Link class="button primary" href="/contacts">
              View contacts
            </Link>
            <button type="button" onClick={props.onRestart}>
              Import another file
            </button>
          </div>
        </>
      )}
    </section>
  );
}
