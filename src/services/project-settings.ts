import { controlDbOf } from "../db/shards";
import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { projects, templates, type Template, type TrackingMode } from "../db/schema";
import { ApiError } from "../lib/errors";
import { CONFIRM_URL_VARIABLE, type ProjectSettingsView, type UpdateProjectSettingsRequest } from "../schemas/project";
import { senderDomain } from "./domains";
import { setProjectSettings } from "../store/projects";
import { requireInboundDomain } from "./send/reply-to";
import { namedAddress } from "./inbound/receive";
import { assertTemplateSyntax } from "./send/render";

/** GET/PATCH /project: the settings a project's owner changes through the API. */

const columns = {
  id: projects.id,
  name: projects.name,
  trackingEnabled: projects.trackingEnabled,
  trackingMode: projects.trackingMode,
  doubleOptIn: projects.doubleOptIn,
  doubleOptInTemplateId: projects.doubleOptInTemplateId,
  defaultFromEmail: projects.defaultFromEmail,
  defaultFromName: projects.defaultFromName,
  trackReplies: projects.trackReplies,
  unsubscribeFooter: projects.unsubscribeFooter,
  storedBytes: projects.storedBytes,
  r2StoredBytes: projects.r2StoredBytes,
  updatedAt: projects.updatedAt,
};

type SettingsRow = {
  id: string;
  name: string;
  trackingEnabled: boolean;
  trackingMode: TrackingMode;
  doubleOptIn: boolean;
  doubleOptInTemplateId: string | null;
  defaultFromEmail: string | null;
  defaultFromName: string | null;
  trackReplies: boolean;
  unsubscribeFooter: string | null;
  storedBytes: number;
  r2StoredBytes: number;
  updatedAt: Date;
};

/** The project's tracking as the API shows it: tracking_enabled = 0 (the operator's switch, older rows) is DISABLED. */
export const trackingModeOf = (row: { trackingEnabled: boolean; trackingMode: TrackingMode }): TrackingMode =>
  row.trackingEnabled ? row.trackingMode : "DISABLED";

const view = ({ defaultFromEmail, defaultFromName, trackReplies, ...row }: SettingsRow, inboundDomain: string | null): ProjectSettingsView => ({
  ...row,
  inbound: { trackReplies, domain: inboundDomain, namedAddress: inboundDomain ? namedAddress("support", row.id, inboundDomain) : null },
  trackingMode: trackingModeOf(row),
  trackingEnabled: trackingModeOf(row) !== "DISABLED",
  defaultFrom: defaultFromEmail ? { email: defaultFromEmail, name: defaultFromName } : null,
  updatedAt: row.updatedAt.toISOString(),
});

/** `inboundDomain`: the deployment's INBOUND_DOMAIN (null: none), shown with the inbound settings. */
export async function getProjectSettings(db: Database, projectId: string, inboundDomain: string | null = null): Promise<ProjectSettingsView> {
  const [row] = await db.select(columns).from(projects).where(eq(projects.id, projectId)).limit(1);
  if (!row) throw ApiError.notFound("Project");
  return view(row, inboundDomain);
}

/** The project's default sender (PATCH /project defaultFrom) and marketing footer (unsubscribeFooter), as a query for a read batch or to await. */
export const defaultSenderQuery = (db: Database, projectId: string) =>
  db
    .select({ defaultFromEmail: projects.defaultFromEmail, defaultFromName: projects.defaultFromName, unsubscribeFooter: projects.unsubscribeFooter })
    .from(projects)
    .where(eq(projects.id, projectId));

/** A default-sender row as a mailbox; undefined when the project has none. */
export const defaultSenderOf = (row: { defaultFromEmail: string | null; defaultFromName: string | null } | undefined) =>
  row?.defaultFromEmail ? { email: row.defaultFromEmail, name: row.defaultFromName ?? undefined } : undefined;

/** Whether this address is on a VERIFIED domain of the project (senderDomain's 403 as false). */
async function onVerifiedDomain(db: Database, projectId: string, address: string): Promise<boolean> {
  return senderDomain(db, projectId, address).then(
    () => true,
    (err: unknown) => {
      if (err instanceof ApiError && err.code === "DOMAIN_NOT_VERIFIED") return false;
      throw err;
    },
  );
}

const invalid = (message: string, code = "invalid_template") => ApiError.validation([{ field: "doubleOptInTemplateId", message, code }]);

/**
 * Why this template cannot be the double opt-in confirmation, or null: it
 * must use {{confirmUrl}} and have a `from` on a VERIFIED domain of the project.
 */
export async function confirmationTemplateProblem(db: Database, projectId: string, template: Template | undefined): Promise<string | null> {
  if (!template) return "No template with this id in this project";
  if (!`${template.subject}\n${template.body}`.includes(CONFIRM_URL_VARIABLE)) {
    return `The template must use {{${CONFIRM_URL_VARIABLE}}} (the signed confirm link) in its subject or body`;
  }
  if (!template.from) return "The template must have a from address (on a verified domain of this project)";
  return (await onVerifiedDomain(db, projectId, template.from))
    ? null
    : `The template's from address ${template.from} is not on a verified domain of this project`;
}

/**
 * Applies only the fields given. Turning double opt-in on (or changing its
 * template while on) needs a usable confirmation template: 422 naming
 * `doubleOptInTemplateId` otherwise, and nothing changes. Reply tracking on needs the
 * deployment's inbound domain (`inboundDomain`): 409 naming INBOUND_DOMAIN otherwise.
 */
export async function updateProjectSettings(
  db: Database,
  projectId: string,
  input: UpdateProjectSettingsRequest,
  inboundDomain: string | null = null,
): Promise<ProjectSettingsView> {
  if (input.inbound?.trackReplies) requireInboundDomain(inboundDomain, "inbound.trackReplies");
  const current = await getProjectSettings(db, projectId, inboundDomain);
  const doubleOptIn = input.doubleOptIn ?? current.doubleOptIn;
  const templateId = input.doubleOptInTemplateId === undefined ? current.doubleOptInTemplateId : input.doubleOptInTemplateId;
  if (doubleOptIn) {
    if (!templateId) throw invalid("Double opt-in needs a confirmation template: set doubleOptInTemplateId", "required");
    const template = await db.query.templates.findFirst({ where: and(eq(templates.id, templateId), eq(templates.projectId, projectId)) });
    const problem = await confirmationTemplateProblem(db, projectId, template);
    if (problem) throw invalid(problem);
  }
  if (input.defaultFrom && !(await onVerifiedDomain(db, projectId, input.defaultFrom.email))) {
    throw ApiError.validation([
      { field: "defaultFrom", message: `${input.defaultFrom.email} is not on a verified domain of this project`, code: "domain_not_verified" },
    ]);
  }
  const set: Parameters<typeof setProjectSettings>[2] = {};
  if (input.defaultFrom !== undefined) {
    set.defaultFromEmail = input.defaultFrom?.email ?? null;
    set.defaultFromName = input.defaultFrom?.name || null;
  }
  // The mode, and tracking_enabled kept equal to mode <> DISABLED (trackingEnabled: true is ENABLED, false DISABLED).
  const mode = input.trackingMode ?? (input.trackingEnabled === undefined ? undefined : input.trackingEnabled ? "ENABLED" : "DISABLED");
  if (mode !== undefined) {
    set.trackingMode = mode;
    set.trackingEnabled = mode !== "DISABLED";
  }
  if (input.doubleOptIn !== undefined) set.doubleOptIn = input.doubleOptIn;
  if (input.doubleOptInTemplateId !== undefined) set.doubleOptInTemplateId = input.doubleOptInTemplateId;
  if (input.inbound?.trackReplies !== undefined) set.trackReplies = input.inbound.trackReplies;
  if (input.unsubscribeFooter !== undefined) {
    if (input.unsubscribeFooter !== null) await assertTemplateSyntax(input.unsubscribeFooter, "unsubscribeFooter");
    set.unsubscribeFooter = input.unsubscribeFooter;
  }
  if (Object.keys(set).length === 0) return current;
  set.updatedAt = new Date();
  const [row] = await setProjectSettings(db.$client, projectId, set).returning(columns);
  // The control row too (the API key lookup reads doubleOptIn there) when the project is on another shard than 0.
  const control = controlDbOf(db.$client);
  if (control !== db.$client) await setProjectSettings(control, projectId, set);
  return view(row, inboundDomain);
}
