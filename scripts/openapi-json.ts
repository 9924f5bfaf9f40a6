/**
 * Writes the API's OpenAPI document (what GET /openapi.json answers, built from
 * the app's own routes) to the given file, or to stdout. For Redocly's lint:
 *
 *   npx tsx scripts/openapi-json.ts openapi.json && npx redocly lint openapi.json
 */
import { writeFileSync } from "node:fs";
import { openApiDocument } from "./dashboard-api-types";

const text = `${JSON.stringify(await openApiDocument(), null, 2)}\n`;
if (process.argv[2]) writeFileSync(process.argv[2], text);
else process.stdout.write(text);
