import * as z from "../lib/zod";
import { listEnvelope } from "../lib/openapi";
import { headerText } from "../lib/validators";

/** Topics (CONTRACT "Topics and the preference page"): what a contact agreed to receive. */

export const TOPIC_KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,49}$/;
export const MAX_TOPIC_NAME = 50;
export const MAX_TOPIC_DESCRIPTION = 200;
/** At most this many topic choices in one PATCH /contacts/{id}/topics, POST /contacts or /v1/track (a project has at most QUOTA_TOPICS topics). */
export const MAX_TOPIC_CHOICES = 100;

export const TopicKeySchema = z
  .string()
  .regex(TOPIC_KEY_PATTERN, "A topic key is 1 to 50 characters of a-z, 0-9, _ and -, starting with a letter or digit")
  .openapi({ example: "product-updates" });

const SubscriptionEnum = z.enum(["OPT_IN", "OPT_OUT"]);

export const TopicSchema = z
  .object({
    id: z.string(),
    key: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    defaultSubscription: SubscriptionEnum.openapi({
      description: "OPT_IN: every subscribed contact gets the topic's mail unless it opted out; OPT_OUT: only contacts that opted in. Immutable.",
    }),
    visibility: z.enum(["PUBLIC", "PRIVATE"]).openapi({
      description:
        "PUBLIC topics are listed on every contact's preference page; a PRIVATE topic only on the page of a contact that is in it (OPT_IN or PENDING).",
    }),
    doubleOptIn: z.boolean().openapi({
      description:
        "An opt-in through the API or /v1/track is PENDING and sends the project's confirmation template (PATCH /project doubleOptInTemplateId; needed to set this, else 422); its {{confirmUrl}} makes the choice OPT_IN",
    }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Topic");
export type TopicView = z.infer<typeof TopicSchema>;

const name = headerText(MAX_TOPIC_NAME).min(1).openapi({ example: "Product updates" });
const description = z.string().trim().max(MAX_TOPIC_DESCRIPTION).nullable().optional();

export const CreateTopicSchema = z
  .object({
    key: TopicKeySchema,
    name,
    description,
    defaultSubscription: SubscriptionEnum,
    visibility: z.enum(["PUBLIC", "PRIVATE"]).default("PRIVATE"),
    doubleOptIn: z.boolean().default(false),
  })
  .strict()
  .openapi("CreateTopic");
export type CreateTopicRequest = z.infer<typeof CreateTopicSchema>;

export const UpdateTopicSchema = z
  .object({
    name: name.optional(),
    description,
    visibility: z.enum(["PUBLIC", "PRIVATE"]).optional(),
    doubleOptIn: z.boolean().optional(),
  })
  .strict()
  .openapi("UpdateTopic", { description: "`key` and `defaultSubscription` cannot be changed (422 naming the field)." });
export type UpdateTopicRequest = z.infer<typeof UpdateTopicSchema>;

export const TopicListResponseSchema = listEnvelope(TopicSchema);

export const ContactTopicSchema = z
  .object({
    id: z.string(),
    key: z.string(),
    name: z.string(),
    subscription: z.enum(["OPT_IN", "OPT_OUT", "PENDING"]),
    explicit: z.boolean().openapi({ description: "The contact made this choice; false: the topic's default" }),
  })
  .openapi("ContactTopic");
export type ContactTopicView = z.infer<typeof ContactTopicSchema>;
export const ContactTopicListResponseSchema = listEnvelope(ContactTopicSchema);

export const UpdateContactTopicsSchema = z
  .object({
    topics: z
      .array(z.object({ key: TopicKeySchema, subscription: SubscriptionEnum }).strict())
      .min(1)
      .max(MAX_TOPIC_CHOICES),
  })
  .strict()
  .openapi("UpdateContactTopics");
export type UpdateContactTopicsRequest = z.infer<typeof UpdateContactTopicsSchema>;

/** `topics: {"<key>": true|false}` on POST /contacts and a secret-key /v1/track (the Loops `mailingLists` shape). */
export const TopicChoicesSchema = z
  .record(TopicKeySchema, z.boolean())
  .refine((v) => Object.keys(v).length <= MAX_TOPIC_CHOICES, `At most ${MAX_TOPIC_CHOICES} topics`)
  .openapi({
    description: "Topic choices by key: true opts in (PENDING for a double opt-in topic), false opts out. An unknown key is a 422 naming `topics.<key>`.",
    example: { "product-updates": true },
  });
export type TopicChoices = z.infer<typeof TopicChoicesSchema>;
