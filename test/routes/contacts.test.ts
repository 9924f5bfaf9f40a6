import { describe, expect, it } from "vitest";
import { expectError, newProject } from "../helpers";

describe("POST /contacts", () => {
  it("creates a contact (201), then updates it by email case-insensitively (200)", async () => {
    const p = await newProject();
    const created = await p.api.post("/contacts", { email: "Ada@Example.com", data: { plan: "free", city: "London" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      email: "ada@example.com",
      subscribed: true,
      data: { plan: "free", city: "London" },
      _meta: { isNew: true, isUpdate: false },
    });
    const updated = await p.api.post("/contacts", { email: "ADA@example.com", data: { plan: "pro", city: null } });
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(created.body.id);
    expect(updated.body.data).toEqual({ plan: "pro" });
    expect(updated.body._meta).toEqual({ isNew: false, isUpdate: true });
  });
});
