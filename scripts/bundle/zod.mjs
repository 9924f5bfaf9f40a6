// Stands in for "zod" in the deployed bundle (wrangler.toml [alias]). zod's `z` is a
// namespace of everything zod exports, so esbuild keeps all of it. This module exports
// the same bindings and its own namespace as `z`, minus what nothing here uses:
// `locales` (~370 KB of error messages in other languages; errors here are English),
// `core` (re-exports the locales too), `compile` (the schema JIT) and `fromJSONSchema`.
import * as z from "./zod.mjs";

export * from "zod/v4";
export const locales = undefined;
export const core = undefined;
export const compile = undefined;
export const fromJSONSchema = undefined;
export { z, z as default };
