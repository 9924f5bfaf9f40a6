import { createRoute } from "@hono/zod-openapi";
import { getDb } from "../db/client";
import { commonErrors, jsonBody, jsonResponse, securityScheme, success, successEnvelope } from "../lib/openapi";
import { createRouter } from "../lib/router";
import { ProjectSettingsSchema, UpdateProjectSettingsSchema } from "../schemas/project";
import { getProjectSettings, updateProjectSettings } from "../services/project-settings";

const tags = ["Project"];

const getRoute = createRoute({
  method: "get",
  path: "/project",
  tags,
  summary: "Get the project's settings",
  description: "The settings of the key's project. Secret key only.",
  security: securityScheme,
  responses: { 200: jsonResponse(successEnvelope(ProjectSettingsSchema), "The project's settings"), ...commonErrors },
});

const updateRoute = createRoute({
  method: "patch",
  path: "/project",
  tags,
  summary: "Change the project's settings",
  description: [
    "Only the fields given change. Secret key only.",
    'Double opt-in: `{"doubleOptIn": true, "doubleOptInTemplateId": "<template id>"}`. The template must use `{{confirmUrl}}` and have a `from` on a VERIFIED domain of the project; otherwise 422 naming `doubleOptInTemplateId`, and nothing changes. While it is on, that template cannot be deleted.',
    "With double opt-in on, a contact a public key (pk_) creates through POST /v1/track is created unsubscribed and sent the template (transactional, not tracked; variables `confirmUrl`, `email`). The link's page has a Confirm button; confirming subscribes the contact, which starts CONTACT_SUBSCRIBED workflows and records `contact.subscribed`. The link is valid for 7 days. Until then the contact is in no marketing audience. An existing contact is never changed by a public key, so it gets no confirmation email; secret-key writes are not affected.",
  ].join(" "),
  security: securityScheme,
  request: { body: jsonBody(UpdateProjectSettingsSchema) },
  responses: { 200: jsonResponse(successEnvelope(ProjectSettingsSchema), "The updated settings"), ...commonErrors },
});

export const projectRouter = createRouter()
  .openapi(getRoute, async (c) => c.json(success(await getProjectSettings(getDb(c.env.DB), c.get("auth").projectId)), 200))
  .openapi(updateRoute, async (c) => {
    const settings = await updateProjectSettings(getDb(c.env.DB), c.get("auth").projectId, c.req.valid("json"));
    return c.json(success(settings), 200);
  });
