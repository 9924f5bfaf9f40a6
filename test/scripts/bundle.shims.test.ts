import fc from "fast-check";
import { describe, expect, it } from "vitest";
// The real modules (this Node project applies no aliases) and the deployed bundle's stand-ins.
import realDefineProperty from "@babel/runtime-corejs3/helpers/esm/defineProperty";
import realTrim from "@babel/runtime-corejs3/core-js/instance/trim";
import defineProperty from "../../scripts/bundle/define-property.mjs";
import trim from "../../scripts/bundle/instance-trim.mjs";

/**
 * wrangler.toml [alias] swaps two @babel/runtime-corejs3 modules that mimetext's
 * browser build imports for native one-liners. Here each stand-in is compared with
 * the real module on the inputs mimetext gives them (string keys, strings to trim).
 */
describe("scripts/bundle stand-ins for mimetext's Babel helpers", () => {
  it("defineProperty gives the same own property, descriptor and return value as Babel's helper", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.anything()), fc.string(), fc.anything(), (initial, key, value) => {
        const a = { ...initial };
        const b = { ...initial };
        expect(defineProperty(a, key, value)).toBe(a);
        expect(realDefineProperty(b, key, value)).toBe(b);
        expect(Object.getOwnPropertyDescriptor(a, key)).toEqual(Object.getOwnPropertyDescriptor(b, key));
        expect(Object.keys(a)).toEqual(Object.keys(b));
      }),
    );
  });

  it("trim(s).call(s) trims as core-js's instance trim does, for every kind of white space", () => {
    const space = fc.constantFrom(" ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff");
    const padded = fc.tuple(fc.array(space), fc.string(), fc.array(space)).map(([l, s, r]) => `${l.join("")}${s}${r.join("")}`);
    fc.assert(
      fc.property(padded, (s) => {
        expect(trim(s).call(s)).toBe(realTrim(s).call(s));
      }),
    );
    expect(trim('  "Ada" <ada@example.net> ').call('  "Ada" <ada@example.net> ')).toBe('"Ada" <ada@example.net>');
  });
});
