/**
 * The template language's one addition to Liquid: `{{ name ?? fallback }}`, rewritten to Liquid's
 * `default` filter before parsing. Zod-free and dependency-free: the Worker's renderer
 * (services/send/render/liquid.ts) and the dashboard's live preview (dashboard/src/preview.ts) import this one copy.
 */

/** White space as the scanner skips it (Unicode spaces and line breaks); render/limits.ts's tag counter skips the same. */
export const isSpace = (c: number) =>
  c === 32 ||
  (c >= 9 && c <= 13) ||
  c === 0xa0 ||
  c === 0xfeff ||
  c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 ||
  c === 0x2029 ||
  c === 0x202f ||
  c === 0x205f ||
  c === 0x3000;
const isLineBreak = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
const isNameStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
/** A variable name's characters after the first: letters, digits, `_`, `.` and `-`. */
export const isNameChar = (c: number) => isNameStart(c) || (c >= 48 && c <= 57) || c === 46 || c === 45;

/**
 * `{{ name ?? fallback }}` -> `{{ name | default: "fallback" }}` (quotes around the fallback are optional).
 * The fallback runs to the first `}}` and stays on one line. One pass: the next `}}` and the
 * next line break are looked up once each and reused, so no input makes it quadratic.
 */
export function translateDefaults(template: string): string {
  let out = "";
  let copied = 0;
  let close = -2; // next "}}" at or after the fallback's start (-1: none left)
  let fallbackEnd = 0; // where the fallback before `close` ends (its trailing whitespace dropped)
  let lineBreak = -2; // next line break at or after the fallback's start (-1: none left)
  for (let open = template.indexOf("{{"); open !== -1; open = template.indexOf("{{", open + 1)) {
    let i = open + 2;
    while (i < template.length && isSpace(template.charCodeAt(i))) i++;
    if (!isNameStart(template.charCodeAt(i))) continue;
    const nameStart = i;
    while (isNameChar(template.charCodeAt(i))) i++;
    const name = template.slice(nameStart, i);
    while (i < template.length && isSpace(template.charCodeAt(i))) i++;
    if (template.charCodeAt(i) !== 63 || template.charCodeAt(i + 1) !== 63) continue;
    i += 2;
    while (i < template.length && isSpace(template.charCodeAt(i))) i++;
    if (close !== -1 && close < i) {
      close = template.indexOf("}}", i);
      fallbackEnd = close;
      while (fallbackEnd > 0 && isSpace(template.charCodeAt(fallbackEnd - 1))) fallbackEnd--;
    }
    if (close === -1) break;
    const end = Math.max(i, fallbackEnd);
    if (lineBreak !== -1 && lineBreak < i) {
      lineBreak = i;
      while (lineBreak < template.length && !isLineBreak(template.charCodeAt(lineBreak))) lineBreak++;
      if (lineBreak === template.length) lineBreak = -1;
    }
    if (lineBreak !== -1 && lineBreak < end) continue;
    out += template.slice(copied, open) + defaultOutput(name, template.slice(i, end));
    copied = close + 2;
    open = close + 1;
  }
  return copied === 0 ? template : out + template.slice(copied);
}

function defaultOutput(name: string, fallback: string): string {
  const quoted = fallback.length >= 2 && (fallback[0] === '"' || fallback[0] === "'") && fallback[fallback.length - 1] === fallback[0];
  const unquoted = quoted ? fallback.slice(1, -1) : fallback;
  const quote = unquoted.includes('"') ? "'" : '"';
  return `{{ ${name} | default: ${quote}${unquoted.split(quote).join("")}${quote} }}`;
}
