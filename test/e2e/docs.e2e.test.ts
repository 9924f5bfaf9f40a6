import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeInspectorPort, freePort, type LocalServer, repoCopy, startLocalServer } from "../../scripts/lib/local-server.mjs";

/**
 * Docs that run: every shell block (```sh, ```bash, ```shell) of the pages below is executed, in
 * order, against a fresh `npm run dev`. The convention (also in docs/getting-started.md):
 *
 * - A block that is not meant to run says so on the line right before its fence (blank lines in
 *   between are allowed): `<!-- not run: <why> -->`, e.g. `<!-- not run: needs a Cloudflare account -->`.
 *   Every other shell block runs, and one that fails fails this test with its file:line and output.
 * - Each page runs in one bash session (`set -euo pipefail`) from the repository root, so a
 *   variable one block sets (`SK=...`) is there in the next; pages do not share sessions, so each
 *   page defines what it uses.
 * - `curl` is `curl --fail-with-body` in that session: an HTTP error answer (4xx/5xx) fails the
 *   block as a non-zero exit does. A block that shows an error on purpose says so with `|| true`.
 * - The URLs are the ones a reader uses: `http://127.0.0.1:8787` (the service) is rewritten to this
 *   test's server and `http://127.0.0.1:3000` (the pages' example webhook receiver) to a receiver the
 *   test runs, which answers 204; the project CLI's default URL likewise (EDGE_MAIL_URL).
 * - A comment `# -> {...}` after a command is the answer it shows: its fixed parts (between `...`,
 *   `…` and `<placeholders>`) must appear, in order, in the block's output (whitespace ignored).
 * - "Fresh": `npm run dev` runs in a throwaway copy of the working tree (repoCopy(): its own
 *   .dev.vars, .dev/project.json and .wrangler/state; node_modules symlinked) on a free port.
 */
const pages = ["README.md", "docs/getting-started.md", "docs/import-export.md", "docs/webhooks.md", "docs/api.md", "docs/inbound.md"];
const SHELL = /^(sh|bash|shell)$/;
const NOT_RUN = /^<!--\s*not run:\s*(.+?)\s*-->$/;

interface Block {
  page: string;
  line: number; // of the opening fence, 1-based
  code: string;
  notRun?: string;
}

/** The shell blocks of a markdown page, with their not-run marks. */
function shellBlocks(page: string, text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^\\s*${fence}\\s*$`).test(lines[j]); j++)
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j]);
    if (SHELL.test(info)) {
      let k = i - 1;
      while (k >= 0 && lines[k].trim() === "") k--;
      const mark = k >= 0 ? NOT_RUN.exec(lines[k].trim()) : null;
      blocks.push({ page, line: i + 1, code: body.join("\n"), notRun: mark?.[1] });
    }
    i = j;
  }
  return blocks;
}

let copy: ReturnType<typeof repoCopy>;
let server: LocalServer;
let receiver: Server;
let port: number;
let receiverPort: number;
const received: { url: string; headers: Record<string, unknown>; body: string }[] = [];

beforeAll(async () => {
  copy = repoCopy({ prefix: "edge-mail-docs-" });
  port = await freePort();
  receiverPort = await freePort();
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      received.push({ url: req.url ?? "", headers: req.headers, body });
      res.writeHead(204).end();
    });
  }).listen(receiverPort, "127.0.0.1");
  const inspectorPort = await freeInspectorPort();
  server = await startLocalServer(["node", "scripts/dev.mjs", "--inspector-port", String(inspectorPort), "--show-interactive-dev-session=false"], {
    url: `http://127.0.0.1:${port}`,
    cwd: copy.dir,
    env: { ...process.env, PORT: String(port), NO_COLOR: "1", CI: "1", WRANGLER_SEND_METRICS: "false" },
    timeoutMs: 150_000,
    pollMs: 300,
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  receiver?.close();
  copy?.remove();
});

/** Runs a page's blocks in one bash session; the first failing block, or null. */
/**
 * The `# -> <answer>` comments of a block that ran, checked against its output: the answer's
 * fixed parts (split at `...`, `…` and `<placeholders>`, a leading HTTP status and any trailing
 * remark dropped, whitespace ignored) must appear in the output in that order. The mismatches.
 */
function expectedAnswers(block: Block, output: string): string[] {
  const flat = output.replace(/\s+/g, "");
  const wrong: string[] = [];
  block.code.split("\n").forEach((text, i) => {
    const start = /#\s*->\s*(?:\d{3}\s+)?[{[]/.exec(text);
    if (!start) return;
    // The answer runs to the bracket that closes its first one (a remark after it is not part of it).
    let depth = 0;
    let end = start.index + start[0].length - 1;
    for (; end < text.length; end++) {
      depth += "{[".includes(text[end]) ? 1 : "}]".includes(text[end]) ? -1 : 0;
      if (depth === 0) break;
    }
    const answer = text.slice(start.index + start[0].length - 1, end + 1);
    let from = 0;
    for (const part of answer.split(/\.\.\.|…|<[^>]*>/).map((p) => p.replace(/\s+/g, ""))) {
      if (!part) continue;
      const at = flat.indexOf(part, from);
      if (at < 0) {
        wrong.push(`${block.page}:${block.line + 1 + i}: the answer has no ${JSON.stringify(part)} where ${answer} says (output: ${output.slice(0, 600)})`);
        return;
      }
      from = at + part.length;
    }
  });
  return wrong;
}

/** A page's blocks that ran and the output of each. */
const outputs = new Map<string, { block: Block; output: string }[]>();

async function runPage(page: string, blocks: Block[]): Promise<{ block: Block; status: number; output: string } | null> {
  const dir = join(copy.dir, ".docs-run", page.replace(/[/.]/g, "_"));
  mkdirSync(dir, { recursive: true });
  const runnable = blocks.filter((b) => !b.notRun);
  const driver = [
    "set -euo pipefail",
    `cd ${JSON.stringify(copy.dir)}`,
    'curl() { command curl --fail-with-body "$@"; }',
    // The project CLI's import and export default to http://127.0.0.1:8787 too.
    `export EDGE_MAIL_URL=http://127.0.0.1:${port}`,
    ...runnable.flatMap((block, n) => {
      const code = block.code.replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`).replaceAll("127.0.0.1:3000", `127.0.0.1:${receiverPort}`);
      writeFileSync(join(dir, `block-${n}.sh`), `${code}\n`);
      return [`echo ${n} > ${dir}/current`, `source ${dir}/block-${n}.sh > ${dir}/out-${n} 2>&1`];
    }),
    `echo done > ${dir}/current`,
  ].join("\n");
  writeFileSync(join(dir, "driver.sh"), `${driver}\n`);
  const status = await new Promise<number>((resolve) => {
    const child = spawn("bash", [join(dir, "driver.sh")], { cwd: copy.dir, stdio: "ignore", env: { ...process.env, NO_COLOR: "1" } });
    const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
  let current = "";
  try {
    current = readFileSync(join(dir, "current"), "utf8").trim();
  } catch {
    // the session ended before its first block (the cd)
  }
  if (status === 0 && current === "done") {
    outputs.set(
      page,
      runnable.map((block, n) => ({ block, output: readFileSync(join(dir, `out-${n}`), "utf8") })),
    );
    return null;
  }
  const n = current === "" || current === "done" ? 0 : Number(current);
  let output = "";
  try {
    output = readFileSync(join(dir, `out-${n}`), "utf8");
  } catch {
    // nothing written
  }
  return { block: runnable[n], status, output };
}

describe("the docs' shell blocks run against a fresh npm run dev", () => {
  for (const page of pages) {
    it(`${page}: every block not marked "not run" exits 0`, async () => {
      const blocks = shellBlocks(page, readFileSync(join(copy.dir, page), "utf8"));
      const failed = await runPage(page, blocks);
      if (failed) {
        const { block, status, output } = failed;
        throw new Error(
          `${block.page}:${block.line}: the block exited with ${status} (mark it <!-- not run: <why> --> if it is not meant to run)\n` +
            `${block.code}\n--- its output ---\n${output.slice(-4000)}\n--- the server's last lines ---\n${server.output().slice(-1500)}`,
        );
      }
      for (const block of blocks) if (block.notRun !== undefined) expect(block.notRun.length, `${block.page}:${block.line}: say why`).toBeGreaterThan(3);
      // The answers the blocks' comments show (`# -> {...}`).
      expect((outputs.get(page) ?? []).flatMap(({ block, output }) => expectedAnswers(block, output))).toEqual([]);
      // webhooks.md's test event reached the receiver standing in for the page's (port 3000).
      if (page === "docs/webhooks.md") expect(received.some((r) => r.body.includes('"webhook.test"'))).toBe(true);
      // inbound.md's reply, delivered to the local email handler, was listed linked to its email by the reply token.
      if (page === "docs/inbound.md") {
        const listed = (outputs.get(page) ?? []).map(({ output }) => output).join("\n");
        expect(listed).toMatch(/"subject":"Re: Your order #1042","match":"TOKEN","autoReply":false,[^}]*"status":"PARSED"/);
      }
    }, 170_000);
  }

  it("an unmarked block that fails is reported with its page:line and output; a marked one is not run; variables carry over", async () => {
    const page = [
      "# A page",
      "",
      "```sh",
      "X=1",
      "```",
      "",
      "<!-- not run: would fail -->",
      "```sh",
      "false",
      "```",
      "",
      "```bash",
      'echo "x is $X"',
      "curl -s http://127.0.0.1:8787/no-such-route",
      "```",
      "",
    ].join("\n");
    const blocks = shellBlocks("synthetic.md", page);
    expect(blocks.map((b) => [b.line, b.notRun])).toEqual([
      [3, undefined],
      [8, "would fail"],
      [12, undefined],
    ]);
    const failed = await runPage("synthetic.md", blocks);
    expect(failed?.block.line).toBe(12);
    expect(failed?.status).toBe(22); // curl --fail-with-body on the 404
    expect(failed?.output).toContain("x is 1");
    const shown = { page: "synthetic.md", line: 1, code: 'curl -s "$BASE/thing"\n# -> 201 {"success":true,"data":{"id":"<id>",...}}  (a remark)' };
    expect(expectedAnswers(shown, '{"success": true, "data": {"id": "01ab", "name": "x"}}')).toEqual([]);
    expect(expectedAnswers(shown, '{"success":false,"error":{}}')).toHaveLength(1);
  }, 60_000);
});
