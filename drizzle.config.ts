import { defineConfig } from "drizzle-kit";

// Migrations are generated from src/db/schema.ts with `npm run db:generate`
// and applied with wrangler (`wrangler d1 migrations apply DB`).
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
