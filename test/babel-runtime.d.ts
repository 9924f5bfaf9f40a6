// The two @babel/runtime-corejs3 modules mimetext's browser build imports (no types of their own),
// and their stand-ins in scripts/bundle/ (wrangler.toml [alias]).
declare module "@babel/runtime-corejs3/helpers/esm/defineProperty" {
  export default function defineProperty<T extends object>(target: T, key: PropertyKey, value: unknown): T;
}
declare module "@babel/runtime-corejs3/core-js/instance/trim" {
  export default function trim(it: string): () => string;
}
declare module "*/scripts/bundle/define-property.mjs" {
  export default function defineProperty<T extends object>(target: T, key: PropertyKey, value: unknown): T;
}
declare module "*/scripts/bundle/instance-trim.mjs" {
  export default function trim(it: string): () => string;
}
