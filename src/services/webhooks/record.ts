import { newId } from "../../lib/ids";
import { contactEvent, recordedEventIds } from "../../store/webhooks";

/**
 * The contact.* webhook events of one contact write, as statements to put
 * around it in its batch (`before` ahead of the write, `after` behind it), and
 * a reader for the ids they recorded. Each event is recorded only when what it
 * says happened (see store.contactEvent) and an endpoint subscribes.
 */
export function contactWriteEvents(
  d1: D1Database,
  input: {
    projectId: string;
    at: Date;
    email?: string;
    contactId?: string;
    /** The write creates the contact when there is none. */
    creates?: boolean;
    /** The write changes an existing contact (contact.updated). */
    updates?: boolean;
    /** The subscription the write sets on an existing contact (contact.subscribed / unsubscribed when it changes). */
    subscribed?: boolean;
  },
) {
  const target = { projectId: input.projectId, at: input.at, email: input.email, contactId: input.contactId };
  const pairs = [
    input.creates && contactEvent(d1, { ...target, id: newId(), type: "contact.created", condition: "absent" }),
    input.updates && contactEvent(d1, { ...target, id: newId(), type: "contact.updated", condition: "present" }),
    input.subscribed === true && contactEvent(d1, { ...target, id: newId(), type: "contact.subscribed", condition: "unsubscribed" }),
    input.subscribed === false && contactEvent(d1, { ...target, id: newId(), type: "contact.unsubscribed", condition: "subscribed" }),
  ].filter((pair) => pair !== false && pair !== undefined);
  return {
    before: pairs.map((p) => p.before),
    after: pairs.map((p) => p.after),
    /** The recorded events' ids, from the batch's results of the `before` statements. */
    ids: (beforeResults: readonly (readonly Record<string, unknown>[])[]) => recordedEventIds(beforeResults),
  };
}
