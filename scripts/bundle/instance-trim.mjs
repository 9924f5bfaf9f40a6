// Stands in for @babel/runtime-corejs3's `instance/trim` (core-js-pure) in the deployed
// bundle (wrangler.toml [alias]); mimetext's browser build calls `trim(s).call(s)`.
// workerd's String.prototype.trim is the standard one, so no polyfill is needed.
export default function trim(it) {
  return it.trim;
}
