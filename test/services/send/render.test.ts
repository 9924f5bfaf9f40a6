import { describe, expect, it } from "vitest";
import { isSafeUrl } from "../../../src/lib/html";
import { renderBody, rendersFromDataKeys } from "../../../src/services/send/render";

const vars = (data: Record<string, unknown>) => ({
  data: data as never,
  email: "ada@example.com",
  unsubscribeUrl: "https://edge-mail.test/unsubscribe/e1.sig",
});

/** Every tag and attribute that makes something live in a mail client. */
function liveParts(html: string) {
  return {
    links: [...html.matchAll(/<a\b[^>]*>/gi)].map((m) => m[0]),
    images: [...html.matchAll(/<img\b[^>]*>/gi)].map((m) => m[0]),
    rawTags: [...html.matchAll(/<(script|iframe|svg|object|embed|style|form|input|video|audio|base|meta|link)\b/gi)].map((m) => m[0]),
    handlers: [...html.matchAll(/<[a-z][^>]*\son[a-z]+\s*=/gi)].map((m) => m[0]),
  };
}

const NOTHING_LIVE = { links: [], images: [], rawTags: [], handlers: [] };

/** Markdown (and GFM) constructs a value could try to smuggle into a markdown body. */
const HOSTILE_VALUES: Record<string, string> = {
  inlineLink: "[Reset](javascript:alert(1))",
  inlineLinkHttp: "[Reset your password](https://evil.example/reset)",
  linkWithTitle: '[a](https://evil.example "title")',
  image: "![](https://tracker.example/p.gif)",
  imageWithAlt: "![logo](data:image/png;base64,iVBORw0KGgo=)",
  referenceLink: "[click][r]\n\n[r]: https://evil.example/ref",
  referenceImage: "![x][img]\n\n[img]: https://tracker.example/ref.gif",
  collapsedReference: "[r][]\n\n[r]: https://evil.example/collapsed",
  angleAutolink: "<https://evil.example/auto>",
  angleJavascript: "<javascript:alert(1)>",
  emailAutolink: "<victim@evil.example>",
  bareUrl: "https://evil.example/bare",
  bareWww: "www.evil.example",
  bareEmail: "someone@evil.example",
  rawImg: '<img src=x onerror="alert(1)">',
  rawAnchor: '<a href="https://evil.example">x</a>',
  rawScript: "<script>alert(1)</script>",
  rawSvg: "<svg onload=alert(1)>",
  htmlComment: "<!-- hidden -->",
  entity: "&lt;b&gt; &amp; &#106;avascript:",
  emphasis: "*em* **strong** _u_ __uu__ ~~strike~~",
  codeSpan: "`code` ``two``",
  heading: "\n# Heading\n",
  setextHeading: "\nTitle\n=====\n",
  list: "\n- item\n* star\n1. first\n",
  blockquote: "\n> quoted\n",
  rule: "\n---\n",
  fencedCode: "\n```\nfenced\n```\n",
  indentedCode: "\n\n    indented\n",
  table: "\n| a | b |\n|---|---|\n| 1 | 2 |\n",
  hardBreak: "line  \nbreak\\\nagain",
  backslashes: "\\[not\\](a link) \\* \\_",
  taskList: "\n- [x] done\n",
};

describe("markdown bodies: values are text, never markdown", () => {
  it.each(Object.entries(HOSTILE_VALUES))("%s in a paragraph stays literal and makes nothing live", async (_name, value) => {
    const html = await renderBody("Hello {{v}} and bye", vars({ v: value }), "markdown");
    expect(liveParts(html), html).toEqual(NOTHING_LIVE);
    expect(html, html).not.toMatch(/<(h[1-6]|ul|ol|li|blockquote|hr|pre|table|em|strong|del|code|br)\b/);
    // The one paragraph the template makes, with the value inside it as escaped text.
    expect(html.trim(), html).toBe(`<p>Hello ${escapeHtml(value)} and bye</p>`);
  });

  it("the issue's example: no link, no image, the text shown as written", async () => {
    const data = { name: "[Reset](javascript:alert(1)) ![](https://tracker.example/p.gif)" };
    const html = await renderBody("# Hi {{name}}\n\nThanks.", vars(data), "markdown");
    expect(html).toBe(`<h1>Hi [Reset](javascript:alert(1)) ![](https://tracker.example/p.gif)</h1>\n<p>Thanks.</p>\n`);
  });

  it("values inside the template's own constructs stay text: emphasis, headings, list items, code spans, fenced code", async () => {
    const data = { v: "<b>*x*</b> [y](https://evil.example)" };
    const escaped = escapeHtml(data.v);
    const html = await renderBody(
      "**{{v}}**\n\n## {{v}}\n\n- {{v}}\n\n`{{v}}`\n\n```\n{{v}}\n```\n\n> {{v}}\n\n| h |\n|---|\n| {{v}} |",
      vars(data),
      "markdown",
    );
    expect(html).toContain(`<strong>${escaped}</strong>`);
    expect(html).toContain(`<h2>${escaped}</h2>`);
    expect(html).toContain(`<li>${escaped}</li>`);
    expect(html).toContain(`<code>${escaped}</code>`);
    expect(html).toContain(`<pre><code>${escaped}\n</code></pre>`);
    expect(html).toContain(`<blockquote>\n<p>${escaped}</p>\n</blockquote>`);
    expect(html).toContain(`<td>${escaped}</td>`);
    expect(liveParts(html).links).toEqual([]);
  });

  it("a value as the template's link target works for http(s) and is dropped for javascript: and data:", async () => {
    const template = '[Open]({{url}}) ![pic]({{img}}) <a href="{{url}}">raw</a>';
    const ok = await renderBody(template, vars({ url: "https://example.com/a?b=1&c=2", img: "https://cdn.example/p.png" }), "markdown");
    expect(ok).toContain('<a href="https://example.com/a?b=1&amp;c=2">Open</a>');
    expect(ok).toContain('<img src="https://cdn.example/p.png" alt="pic">');
    expect(ok).toContain('<a href="https://example.com/a?b=1&amp;c=2">raw</a>');
    const bad = await renderBody(template, vars({ url: "javascript:alert(1)", img: "data:image/png;base64,AAAA" }), "markdown");
    expect(bad).not.toMatch(/javascript:|data:/i);
    expect(bad).toContain("<a>Open</a>");
    expect(bad).toContain('<img alt="pic">');
  });

  it("built-ins and defaults render as text too ({{email}}, {{unsubscribeUrl}}, ?? fallbacks), numbers and lists as Liquid prints them", async () => {
    const html = await renderBody(
      '{{email}} [Unsubscribe]({{unsubscribeUrl}}) {{nick ?? "*friend*"}} {{n}} {{list}} {{missing}}|',
      vars({ n: 42, list: ["a", "<b>"] }),
      "markdown",
    );
    expect(html).toBe('<p>ada@example.com <a href="https://edge-mail.test/unsubscribe/e1.sig">Unsubscribe</a> *friend* 42 a&lt;b&gt; |</p>\n');
  });
});

describe("no javascript:/data: URL reaches any email, whoever wrote it", () => {
  const TEMPLATE_CASES: [string, "html" | "markdown"][] = [
    ["[x](javascript:alert(1))", "markdown"],
    ["[x](JaVaScRiPt:alert(1))", "markdown"],
    ["[x](<javascript:alert(1)>)", "markdown"],
    ["[x][r]\n\n[r]: javascript:alert(1)", "markdown"],
    ["<javascript:alert(1)>", "markdown"],
    ["![x](data:image/png;base64,AAAA)", "markdown"],
    ["[x](vbscript:msgbox(1))", "markdown"],
    ['<a href="javascript:alert(1)">x</a>', "html"],
    ['<a href=" javascript:alert(1)">x</a>', "html"],
    ['<a href="jav&#x09;ascript:alert(1)">x</a>', "html"],
    ['<a href="jav\tascript:alert(1)">x</a>', "html"],
    ['<a href="&#106;avascript:alert(1)">x</a>', "html"],
    ['<a href="javascript&colon;alert(1)">x</a>', "html"],
    ['<a href="jav&Tab;ascript:alert(1)">x</a>', "html"],
    ["<a href='data:text/html,<script>alert(1)</script>'>x</a>", "html"],
    ['<img src="data:image/png;base64,AAAA">', "html"],
    ['<img srcset="https://ok.example/a.png 1x, data:image/png;base64,AAAA 2x">', "html"],
    ['<div style="background:url(javascript:alert(1))">x</div>', "html"],
    ["<div style=\"background-image: url('data:image/png;base64,AAAA')\">x</div>", "html"],
    ['<table background="javascript:alert(1)"><tr><td>x</td></tr></table>', "html"],
    ['<form action="javascript:alert(1)"><button formaction="data:x">b</button></form>', "html"],
    ['<svg><a xlink:href="javascript:alert(1)">x</a></svg>', "html"],
    ['<object data="data:text/html,x"></object>', "html"],
    // Spellings the HTML tokenizer reads as an attribute, next to safe ones (the
    // check skips its HTML pass when every URL looks safe, so it must see these).
    ['<a href = "javascript:alert(1)">x</a>', "html"],
    ['<a\nhref=\n"javascript:alert(1)">x</a>', "html"],
    ['<a/href="javascript:alert(1)">x</a>', "html"],
    ['<a title="https://ok.example" href=javascript:alert(1)>x</a>', "html"],
    ['<a href="https://ok.example">ok</a><a href="javascript:alert(1)">x</a>', "html"],
    ["<a href='https://ok.example'>ok</a><img data-x=\"1\" src='data:image/png;base64,AAAA'>", "html"],
    ['<p style="color:red"><a href="https://ok.example" style="color:red;background:url(javascript:alert(1))">x</a></p>', "html"],
    ['<img srcset="https://ok.example/a.png 1x,data:image/png;base64,AAAA 2x" src="https://ok.example/a.png">', "html"],
    // Attribute names in any case (the check's shortcut reads names case-insensitively).
    ['<A HREF="javascript:alert(1)">x</A>', "html"],
    ["<IMG SRC=javascript:alert(1)>", "html"],
    ['<DIV STYLE="background:url(javascript:alert(1))">x</DIV>', "html"],
  ];

  it.each(TEMPLATE_CASES)("template %j (%s): the unsafe URL is removed", async (template, format) => {
    const html = await renderBody(template, vars({}), format);
    // Every attribute value and style left in the output, read loosely (references, whitespace).
    const values = [...html.matchAll(/\s[a-z:-]+\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)/gi)].map((m) =>
      m[1]
        .replace(/&#x0*9;|&#0*9;|&Tab;|&NewLine;|\s/gi, "")
        .replace(/&#106;|&#x6a;/gi, "j")
        .replace(/&colon;/gi, ":"),
    );
    for (const value of values) expect(value, html).not.toMatch(/(javascript|vbscript|data):/i);
    // The element itself stays (only the attribute goes).
    expect(html).toMatch(/<(a|img|div|table|form|object)\b/i);
  });

  it("keeps the URLs mail needs: http(s), mailto, tel, cid, relative links and fragments", async () => {
    const template =
      '<a href="https://example.com/x?a=1&amp;b=2">a</a><a href="HTTP://EXAMPLE.COM">b</a><a href="mailto:help@example.com">c</a>' +
      '<a href="tel:+123">d</a><img src="cid:logo@example.com"><a href="/relative">e</a><a href="#top">f</a><a href="page.html">g</a>' +
      '<div style="background:url(https://cdn.example/bg.png)">h</div>';
    expect(await renderBody(template, vars({}), "html")).toBe(template);
  });

  it("keeps ordinary mail exactly as rendered, links with variables in them included", async () => {
    const template =
      '<p>Hi {{email}}</p><a href="https://example.com/p?id={{n}}&amp;x=1">p</a> <a href="{{unsubscribeUrl}}">unsubscribe</a>' +
      "<img src='https://cdn.example/logo.png' alt='data: none' srcset=\"https://cdn.example/a.png 1x, /b.png 2x\"><p style=\"color:#6b7280;background:url('https://cdn.example/bg.png')\">metadata=x:y href</p>";
    expect(await renderBody(template, vars({ n: 7 }), "html")).toBe(
      '<p>Hi ada@example.com</p><a href="https://example.com/p?id=7&amp;x=1">p</a> <a href="https://edge-mail.test/unsubscribe/e1.sig">unsubscribe</a>' +
        "<img src='https://cdn.example/logo.png' alt='data: none' srcset=\"https://cdn.example/a.png 1x, /b.png 2x\"><p style=\"color:#6b7280;background:url('https://cdn.example/bg.png')\">metadata=x:y href</p>",
    );
  });

  it("a value that makes a link unsafe loses the link, whatever the template around it", async () => {
    for (const url of ["javascript:alert(1)", " JaVaScRiPt:alert(1)", "data:text/html,x"]) {
      const html = await renderBody('<a href="https://ok.example">ok</a><a href="{{url}}">x</a>', vars({ url }), "html");
      expect(html, url).toBe('<a href="https://ok.example">ok</a><a>x</a>');
    }
  });

  it.each([
    "<a title='cite=https://ok.example/x'href=\"javascript:alert(1)\">x</a>",
    '<a title="data=https://ok.example/x"href=javascript:alert(1)>x</a>',
    "<a title='href= https://ok.example/'href='javascript:alert(1)'>x</a>",
  ])("text that looks like a safe URL attribute in front of a real one does not hide it: %s", async (template) => {
    // A quoted value may be followed by the next attribute with no space between them.
    const html = await renderBody(template, vars({}), "html");
    expect(html).not.toMatch(/javascript:/i);
    expect(html).toContain("x</a>");
  });

  it("the unsafe-URL check reads URLs as a browser does", () => {
    for (const safe of ["https://a.example", "http://a", "mailto:a@b.c", "tel:1", "cid:x", "/p", "p?q=a:b", "#f", "", "?a=b"]) {
      expect(isSafeUrl(safe), safe).toBe(true);
    }
    for (const unsafe of [
      "javascript:x",
      " javascript:x",
      "\u0001javascript:x",
      "java\nscript:x",
      "JAVASCRIPT:x",
      "data:x",
      "vbscript:x",
      "file:///etc/passwd",
      "&#x6A;avascript:x",
      "jav&#x0A;ascript:x",
      "javascript&colon;x",
      "jav&Tab;ascript:x",
      "javascript&#58x",
    ]) {
      expect(isSafeUrl(unsafe), unsafe).toBe(false);
    }
  });
});

function escapeHtml(text: string) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

describe("rendersFromDataKeys: whether a template renders from the request's data alone", () => {
  // /v1/send skips reading the recipients' contacts only when this holds, so a
  // `true` here for a template that reads contact data would render it empty.
  const given = new Set(["n", "name"]);
  it.each([
    ["Hello", true],
    ["Hi {{n}} {{ name | upcase }}", true],
    ["Hi {{data.n}} {{ data['name'] }}", true],
    ["{{email}} {{unsubscribeUrl}}", true],
    ["{% assign x = n %}{{x}}{% for i in (1..3) %}{{i}}{{forloop.index}}{% endfor %}", true],
    ["{{ n ?? 'friend' }}", true],
    ["Hi {{plan}}", false],
    ["Hi {{data.plan}}", false],
    ["{{ data | json }}", false],
    ["{% for v in data %}{{v}}{% endfor %}", false],
    ["{{ data[n] }}", false],
    ["{{ n | default: plan }}", false],
    ["{% if plan == 'pro' %}P{% endif %}", false],
    ["{% for t in tags %}{{t}}{% endfor %}", false],
    ["{{ plan ?? 'free' }}", false],
    ["{% unless vip %}x{% endunless %}{% case tier %}{% when 1 %}a{% endcase %}", false],
    ["{{ n | append: suffix }}", false],
    ["{% capture c %}{{ nick }}{% endcapture %}{{c}}", false],
    ["{{ unclosed", false],
  ])("%s -> %s", async (template, expected) => {
    expect(await rendersFromDataKeys(template, given, "text")).toBe(expected);
    expect(await rendersFromDataKeys(template, given, "html")).toBe(expected);
  });
});
