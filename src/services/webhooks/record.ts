import { newId } from "../../lib/ids";
import type { WebhookEventType } from "../../schemas/webhooks";
import { contactEvents, contactsWritten, type ContactEventItem, type WrittenContactItem } from "../../store/webhooks/events";

/** What one contact write does to a contact, for its contact.* webhook events. */
export interface ContactChange {
  email?: string;
  contactId?: string;
  /** The write creates the contact when there is none. */
  creates?: boolean;
  /** The id the write gives the contact if it creates it (upsertContacts' ids): contact.created is then one statement after the write. */
  newId?: string;
  /** The write changes an existing contact (contact.updated). */
  updates?: boolean;
  /** The subscription the write sets on an existing contact (contact.subscribed / unsubscribed when it changes). */
  subscribed?: boolean;
}

/**
 * The contact.* webhook events of one write of one or many contacts, as
 * statements to put around it in its batch (`before` ahead of the write,
 * `after` behind it; a WriteBatch collects the events they record). Each event is
 * recorded only when what it says happened and an endpoint subscribes.
 * contact.created (with the write's new id) and contact.updated are one
 * statement after the write (store.contactsWritten); a subscription change,
 * judged on the contact as it was, adds a statement before and one after
 * (store.contactEvents).
 */
export function contactWriteEvents(d1: D1Database, input: ContactChange & { projectId: string; at: Date; contacts?: readonly ContactChange[] }) {
  const changes = input.contacts ?? [input];
  const items: ContactEventItem[] = [];
  const written: WrittenContactItem[] = [];
  for (const c of changes) {
    const add = (type: WebhookEventType, condition: ContactEventItem["condition"]) =>
      items.push({ id: newId(), type, condition, email: c.email, contactId: c.contactId });
    // Without the write's new id, a created contact is judged before the write (absent), and so is an update beside it.
    const judgedAfter = !c.creates || Boolean(c.newId);
    if (judgedAfter && (c.creates || c.updates)) {
      written.push({ id: newId(), newId: c.newId, contactId: c.contactId, email: c.email, created: Boolean(c.creates), updated: Boolean(c.updates) });
    } else {
      if (c.creates) add("contact.created", "absent");
      if (c.updates) add("contact.updated", "present");
    }
    if (c.subscribed === true) add("contact.subscribed", "unsubscribed");
    if (c.subscribed === false) add("contact.unsubscribed", "subscribed");
  }
  const pair = items.length > 0 ? contactEvents(d1, { projectId: input.projectId, at: input.at, items }) : null;
  const writtenStatement = written.length > 0 ? [contactsWritten(d1, { projectId: input.projectId, at: input.at, items: written })] : [];
  return {
    before: pair ? [pair.before] : [],
    after: [...(pair ? [pair.after] : []), ...writtenStatement],
  };
}
