// Stands in for "zod" in the deployed bundle (wrangler.toml [alias]). zod's `z` is a
// namespace of everything zod exports, and @hono/zod-openapi hands it around whole, so
// esbuild keeps all of it: every schema type, the schema compiler, JSON Schema import
// and ~370 KB of error messages in other languages (errors here are English). This
// module's `z` holds the same functions and classes, only those the code uses;
// test/scripts/zod-stand-in.test.ts fails when src/ uses a z.<name> missing here.
import * as z from "./zod.mjs";

export {
  ZodError,
  ZodType,
  array,
  boolean,
  coerce,
  discriminatedUnion,
  email,
  enum,
  literal,
  null,
  number,
  object,
  preprocess,
  record,
  string,
  union,
  unknown,
} from "zod/v4";
export { z, z as default };
