/**
 * The API's response bodies as the tests read them (`call<T>`), inferred from
 * the route schemas in src/schemas/ so a test cannot drift from the contract.
 */
import type { z } from "@hono/zod-openapi";
import type { CampaignListResponseSchema, CampaignResponseSchema, CampaignStatsResponseSchema, CampaignSchema } from "../../src/schemas/campaigns";
import type { ContactListResponseSchema, ContactSchema, UpsertedContactSchema } from "../../src/schemas/contacts";
import type { DomainListResponseSchema, DomainSchema } from "../../src/schemas/domains";
import type { EmailDetailSchema, EmailListResponseSchema, EmailRecordSchema } from "../../src/schemas/emails";
import type { EventListResponseSchema, EventNamesResponseSchema, TrackEventResponseSchema } from "../../src/schemas/events";
import type { ImportJobSchema } from "../../src/schemas/contact-imports";
import type { ProjectSettingsSchema, SendingStatusSchema } from "../../src/schemas/project";
import type { SegmentListResponseSchema, SegmentMemberListResponseSchema, SegmentSchema } from "../../src/schemas/segments";
import type { SendResponseSchema } from "../../src/schemas/send";
import type { TemplateListResponseSchema, TemplateSchema } from "../../src/schemas/templates";
import type { VerifyAddressResponseSchema } from "../../src/schemas/verify-address";
import type {
  DeliveryListResponseSchema,
  WebhookDeliverySchema,
  WebhookListResponseSchema,
  WebhookSchema,
  WebhookWithSecretSchema,
} from "../../src/schemas/webhooks";
import type {
  CreatedWorkflowSchema,
  ExecutionListResponseSchema,
  ExecutionSchema,
  WorkflowListResponseSchema,
  WorkflowSchema,
} from "../../src/schemas/workflows";

/** `{success: true, data}` (src/lib/openapi.ts successEnvelope). */
export interface Success<T> {
  success: true;
  data: T;
}

/** The general list envelope (src/lib/openapi.ts listEnvelope). */
export type List<T> = Success<{ items: T[]; nextCursor: string | null; hasMore: boolean; total: number }>;

export type SendResponse = z.infer<typeof SendResponseSchema>;
export type TrackResponse = z.infer<typeof TrackEventResponseSchema>;
export type VerifyAddressResponse = z.infer<typeof VerifyAddressResponseSchema>;

export type Contact = z.infer<typeof ContactSchema>;
export type UpsertedContact = z.infer<typeof UpsertedContactSchema>;
export type ContactList = z.infer<typeof ContactListResponseSchema>;

export type Email = z.infer<typeof EmailRecordSchema>;
/** GET /emails/{id}: the record and `html`. */
export type EmailDetail = z.infer<typeof EmailDetailSchema>;
export type EmailList = z.infer<typeof EmailListResponseSchema>;

export type EventList = z.infer<typeof EventListResponseSchema>;
export type EventNames = z.infer<typeof EventNamesResponseSchema>;

export type Campaign = z.infer<typeof CampaignSchema>;
export type CampaignResponse = z.infer<typeof CampaignResponseSchema>;
export type CampaignList = z.infer<typeof CampaignListResponseSchema>;
export type CampaignStats = z.infer<typeof CampaignStatsResponseSchema>;

export type Domain = z.infer<typeof DomainSchema>;
export type DomainList = z.infer<typeof DomainListResponseSchema>;

export type Template = z.infer<typeof TemplateSchema>;
export type TemplateList = z.infer<typeof TemplateListResponseSchema>;

export type Segment = z.infer<typeof SegmentSchema>;
export type SegmentList = z.infer<typeof SegmentListResponseSchema>;
export type MemberList = z.infer<typeof SegmentMemberListResponseSchema>;

export type Webhook = z.infer<typeof WebhookSchema>;
export type WebhookWithSecret = z.infer<typeof WebhookWithSecretSchema>;
export type WebhookList = z.infer<typeof WebhookListResponseSchema>;
export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;
export type DeliveryList = z.infer<typeof DeliveryListResponseSchema>;

export type Workflow = z.infer<typeof WorkflowSchema>;
export type CreatedWorkflow = z.infer<typeof CreatedWorkflowSchema>;
export type WorkflowList = z.infer<typeof WorkflowListResponseSchema>;
export type Execution = z.infer<typeof ExecutionSchema>;
export type ExecutionList = z.infer<typeof ExecutionListResponseSchema>;

export type ImportJob = z.infer<typeof ImportJobSchema>;
export type ImportList = List<ImportJob>;

export type ProjectSettings = Success<z.infer<typeof ProjectSettingsSchema>>;
export type SendingStatus = z.infer<typeof SendingStatusSchema>;

/** A JSON Schema in the API document, as far as the tests walk into one. */
export interface OpenApiSchema {
  type?: string;
  properties?: Record<string, OpenApiSchema>;
  required?: string[];
  $ref?: string;
}

/** An operation of GET /openapi.json, as far as the tests read it. */
export interface OpenApiOperation {
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean }[];
  responses: Record<string, { description: string; content?: Record<string, { schema: OpenApiSchema }> }>;
}

/** GET /openapi.json (OpenAPI 3.1), as far as the tests read it. */
export interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { securitySchemes: Record<string, { type: string; scheme?: string }>; schemas: Record<string, OpenApiSchema> };
}

/** POST /webhooks/ses: what the SNS notification did. */
export type SesFeedbackResponse = Success<{ type: string; outcome: string }>;
