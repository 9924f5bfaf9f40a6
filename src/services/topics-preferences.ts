import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { contacts, emails, projects, type Topic } from "../db/schema";
import type { AfterCommit } from "../lib/after-commit";
import type { ConfigInput } from "../lib/config";
import { WriteBatch } from "../store/batch";
import { upsertContacts } from "../store/contacts";
import { insertContactEvent } from "../store/events";
import type { TopicChoice } from "../store/topics";
import { contactChoices, projectTopics, topicChoiceStatements, topicListOf } from "./topics";
import { contactWriteEvents } from "./webhooks/record";

/**
 * The hosted preference page (`{{preferencesUrl}}`): what the recipient of an email sees and
 * saves. The link signs the email's id; through it the page finds the project and the address,
 * and the contact by address.
 */

export interface PreferenceTopic {
  key: string;
  name: string;
  description: string | null;
  /** OPT_IN or PENDING (its own choice, or the topic's default). */
  checked: boolean;
  pending: boolean;
}

export interface PreferencesState {
  projectName: string;
  email: string;
  subscribed: boolean;
  /** The public topics and the private ones the contact is in (OPT_IN or PENDING), oldest first. */
  topics: PreferenceTopic[];
}

interface Loaded {
  state: PreferencesState;
  projectId: string;
  visible: Topic[];
}

async function load(db: Database, emailId: string): Promise<Loaded | "unknown-email" | "unknown-contact"> {
  const [email] = await db.select({ projectId: emails.projectId, to: emails.toAddress }).from(emails).where(eq(emails.id, emailId)).limit(1);
  if (!email) return "unknown-email";
  const [projectRows, contactRows, all] = await db.batch([
    db.select({ name: projects.name }).from(projects).where(eq(projects.id, email.projectId)).limit(1),
    db
      .select({ id: contacts.id, subscribed: contacts.subscribed })
      .from(contacts)
      .where(and(eq(contacts.projectId, email.projectId), eq(contacts.email, email.to)))
      .limit(1),
    projectTopics(db, email.projectId),
  ]);
  const contact = contactRows[0];
  if (!contact) return "unknown-contact";
  const choices = all.length > 0 ? await contactChoices(db, contact.id) : [];
  const list = topicListOf(all, choices);
  const visible: Topic[] = [];
  const shown: PreferenceTopic[] = [];
  all.forEach((topic, i) => {
    const { subscription } = list[i];
    const inIt = subscription === "OPT_IN" || subscription === "PENDING";
    if (topic.visibility !== "PUBLIC" && !inIt) return;
    visible.push(topic);
    shown.push({ key: topic.key, name: topic.name, description: topic.description ?? null, checked: inIt, pending: subscription === "PENDING" });
  });
  return {
    projectId: email.projectId,
    visible,
    state: { projectName: projectRows[0]?.name ?? "", email: email.to, subscribed: contact.subscribed, topics: shown },
  };
}

/** The page's state, or why there is none. */
export async function readPreferences(db: Database, emailId: string): Promise<PreferencesState | "unknown-email" | "unknown-contact"> {
  const loaded = await load(db, emailId);
  return typeof loaded === "string" ? loaded : loaded.state;
}

/**
 * Saves the form. `all`: unsubscribe from all marketing (contacts.subscribed false; topic choices
 * kept). Otherwise each topic shown is OPT_IN when its box is checked and OPT_OUT when not (only the
 * ones that change are written; the contact proved the address through the signed link, so no double
 * opt-in), and an unsubscribed contact that saves the form with a box checked is subscribed again.
 * Each change records an event; topic changes one `contact.topics.updated` webhook event, a
 * subscription change `contact.subscribed` / `contact.unsubscribed`.
 */
export async function savePreferences(
  db: Database,
  env: ConfigInput,
  emailId: string,
  form: { topics: readonly string[]; all: boolean },
  afterCommit?: AfterCommit,
): Promise<PreferencesState | "unknown-email" | "unknown-contact"> {
  const loaded = await load(db, emailId);
  if (typeof loaded === "string") return loaded;
  const { projectId, state } = loaded;
  const now = new Date();
  const batch = new WriteBatch(db.$client);
  const checked = new Set(form.topics);
  const subscribe = form.all ? false : !state.subscribed && checked.size > 0 ? true : undefined;
  if (subscribe !== undefined && subscribe !== state.subscribed) {
    const upsert = upsertContacts(db.$client, projectId, [{ email: state.email, subscribed: subscribe }], {
      onExisting: subscribe ? "merge" : "unsubscribe",
      subscribedByDefault: subscribe,
      now,
    });
    const hooks = contactWriteEvents(db.$client, { projectId, at: now, email: state.email, subscribed: subscribe });
    const was = and(eq(contacts.projectId, projectId), eq(contacts.email, state.email), eq(contacts.subscribed, !subscribe));
    batch.add(
      insertContactEvent(
        db.$client,
        env,
        projectId,
        { name: subscribe ? "contact.subscribed" : "contact.unsubscribed", data: { method: "preferences" }, emailId, now },
        was,
      ),
      ...hooks.before,
    );
    batch.add(...upsert.statements, ...hooks.after);
  }
  if (!form.all) {
    const choices: TopicChoice[] = [];
    for (const topic of state.topics) {
      const wanted = checked.has(topic.key);
      if (wanted !== topic.checked || (wanted && topic.pending)) choices.push({ key: topic.key, subscription: wanted ? "OPT_IN" : "OPT_OUT" });
    }
    batch.add(
      ...topicChoiceStatements(db.$client, env, { projectId, email: state.email, choices, source: "preferences", pendingForDoubleOptIn: false, now, emailId }),
    );
  }
  if (batch.size > 0) await batch.run({ env, afterCommit });
  return readPreferences(db, emailId);
}
