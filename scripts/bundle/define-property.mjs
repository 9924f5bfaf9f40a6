// Stands in for @babel/runtime-corejs3's defineProperty helper in the deployed bundle
// (wrangler.toml [alias]): mimetext's browser build imports it, and the original pulls
// ~40 KB of core-js-pure polyfills workerd does not need. Same semantics as Babel's helper.
export default function defineProperty(target, key, value) {
  if (key in target) Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
  else target[key] = value;
  return target;
}
