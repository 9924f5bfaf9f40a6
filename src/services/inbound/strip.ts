/**
 * The reply itself out of a received text body: what comes before the quoted history (an
 * "On <date>, <name> wrote:" line, an Outlook header block, "-----Original Message-----",
 * `>` quotes) and before the signature ("-- ", "Sent from my iPhone", "Get Outlook for ...").
 * Our own rules rather than email-reply-parser: that package loads `re2` through
 * `createRequire(import.meta.url)` (not available in a Worker bundle) and otherwise runs
 * backtracking patterns such as `[\s\S]+?` over untrusted text. Every pattern here is
 * anchored to one line and bounded, so the cost is linear in the text's length.
 */

/** A line that starts the quoted history; `next` is the following line, for headers split over two lines. */
const QUOTE_HEADERS: readonly RegExp[] = [
  // Gmail, Apple Mail, Thunderbird: "On Tue, 3 Mar 2026 at 10:00, Ada <ada@example.com> wrote:"
  /^On\s.{1,400}\swrote:\s*$/,
  /^-{2,}\s*Original Message\s*-{2,}\s*$/i,
  /^-{2,}\s*Forwarded message\s*-{2,}\s*$/i,
  /^Le\s.{1,400}\sa écrit\s?:\s*$/,
  /^Am\s.{1,400}\sschrieb\s.{0,400}:\s*$/,
  /^El\s.{1,400}\sescribió:\s*$/,
  /^Il\s.{1,400}\sha scritto:\s*$/,
  /^Op\s.{1,400}\sschreef\s.{0,400}:\s*$/,
];

/** Outlook's block: "From: ..." then, within the next lines, "Sent:" or "Date:" (often after a line of underscores). */
const OUTLOOK_FROM = /^\*?(From|Von|De|Van|Da)\s?:\*?\s.{1,400}$/;
const OUTLOOK_FIELD = /^\*?(Sent|Date|To|Subject|Gesendet|Envoyé|Enviado|Datum|An|À|Para|Betreff|Objet|Asunto)\s?:\*?\s/;
const SEPARATOR = /^\s*_{10,}\s*$/;

const SIGNATURES: readonly RegExp[] = [
  /^-- ?$/,
  /^Sent from my .{1,80}$/,
  /^Sent from (Mail|Outlook|Yahoo Mail|Gmail) for .{1,80}$/,
  /^Get Outlook for .{1,80}$/,
  /^Envoyé de mon .{1,80}$/,
  /^Von meinem .{1,80} gesendet$/,
  /^Enviado desde mi .{1,80}$/,
];

/** Where the quoted history starts (a line index), or the number of lines when there is none. */
function historyStart(lines: readonly string[]): number {
  // From which line on only quotes and blank lines follow (one pass from the end).
  let quotedFrom = lines.length;
  while (quotedFrom > 0 && (lines[quotedFrom - 1].trim() === "" || lines[quotedFrom - 1].trim().startsWith(">"))) quotedFrom--;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line.startsWith(">")) {
      // A quote block that runs to the end is history; a quote followed by the sender's own
      // text (an inline answer) is left in place.
      if (i >= quotedFrom) return i;
      continue;
    }
    if (QUOTE_HEADERS.some((re) => re.test(line))) return i;
    // "On <date>, <name>" and "wrote:" wrapped onto two lines.
    if (/^On\s/.test(line) && i + 1 < lines.length && /^.{0,400}\swrote:\s*$/.test(`${line} ${lines[i + 1].trim()}`)) return i;
    if (SEPARATOR.test(line) && i + 1 < lines.length && OUTLOOK_FROM.test(lines[i + 1].trim())) return i;
    if (OUTLOOK_FROM.test(line)) {
      const following = lines.slice(i + 1, i + 5).map((l) => l.trim());
      if (following.some((l) => OUTLOOK_FIELD.test(l))) return i;
    }
  }
  return lines.length;
}

/** The reply without quoted history and signature, trimmed; "" when nothing is left. */
export function stripReply(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let end = historyStart(lines);
  for (let i = 0; i < end; i++) {
    const line = lines[i];
    if (SIGNATURES.some((re) => re.test(line.trimEnd()))) {
      end = i;
      break;
    }
  }
  return lines.slice(0, end).join("\n").trim();
}
