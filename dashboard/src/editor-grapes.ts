/**
 * The visual email editor: GrapesJS with its newsletter preset (blocks made of tables, a CSS
 * inliner), loaded only by editor-visual.tsx's dynamic import(), so Vite puts it, its CSS and the
 * preset in their own chunk and the first page never downloads them.
 *
 * Configured for the dashboard's CSP (script-src 'self', connect-src 'self', style-src 'self'
 * 'unsafe-inline'): no icon font from a CDN (cssIcons), no telemetry request, no storage, no
 * remote assets; GrapesJS's own CSS is bundled by Vite.
 */
import grapesjs, { type Editor } from "grapesjs";
import "grapesjs/dist/css/grapes.min.css";
import presetModule from "grapesjs-preset-newsletter";

// The preset is CommonJS whose exports are `{default: plugin}` without __esModule: the bundler's default import is that object.
const newsletter = ((presetModule as unknown as { default?: typeof presetModule }).default ?? presetModule) as typeof presetModule;

export interface MountedEditor {
  /** The body as it would be sent: the editor's HTML with its CSS inlined (the preset's juice), `{{...}}` kept as written. */
  html(): string;
  /** Replaces the content (the HTML tab's text going back to the visual editor). */
  load(html: string): void;
  destroy(): void;
}

/** The blocks offered, in order (the preset's image blocks are left out: their placeholders load from a third-party host). */
const BLOCKS = ["text", "button", "link", "divider", "sect100", "sect50", "sect30", "sect37", "text-sect", "quote", "list-items", "grid-items"];

/** The part of a body GrapesJS edits: what is inside <body>, without a doctype or <head> around it. */
function inner(html: string): string {
  const body = /<body[^>]*>([\s\S]*)<\/body>/i.exec(html);
  return body ? body[1] : html;
}

/**
 * Mounts the editor in `container` with `html`; `onChange` gets the inlined HTML after each edit
 * made in the editor (loading content is not an edit, so opening a draft never rewrites its body).
 */
export function mountEditor(container: HTMLElement, html: string, onChange: (html: string) => void): MountedEditor {
  const editor: Editor = grapesjs.init({
    container,
    height: "100%",
    width: "auto",
    fromElement: false,
    storageManager: false,
    noticeOnUnload: false,
    telemetry: false,
    cssIcons: "",
    avoidInlineStyle: true,
    assetManager: { upload: false, assets: [] },
    plugins: [(e) => newsletter(e, { blocks: BLOCKS, showBlocksOnLoad: true, useCustomTheme: false, juiceOpts: { preserveImportant: true } })],
    components: inner(html),
  });
  let loading = true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const output = () => {
    const inlined = editor.runCommand("gjs-get-inlined-html") as string;
    // The wrapper's own <body> tag and its generated id are the editor's, not the mail's.
    return inner(inlined).trim();
  };
  // The canvas is a frame: named for screen readers as soon as it exists (axe: frame-title), and again once loaded.
  const nameFrame = () => editor.Canvas.getFrameEl()?.setAttribute("title", "Email body: visual editor canvas");
  nameFrame();
  editor.on("canvas:frame:load", nameFrame);
  editor.on("load", () => {
    nameFrame();
    // The panel of blocks, styles and layers scrolls: keyboard users reach it (axe: scrollable-region-focusable).
    const views = container.querySelector(".gjs-pn-views-container");
    views?.setAttribute("tabindex", "0");
    views?.setAttribute("role", "region");
    views?.setAttribute("aria-label", "Editor panel: blocks, styles, layers");
    loading = false;
  });
  editor.on("update", () => {
    if (loading) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      onChange(output());
    }, 200);
  });
  return {
    html: output,
    load(next) {
      loading = true;
      editor.setComponents(inner(next));
      setTimeout(() => {
        loading = false;
      }, 0);
    },
    destroy() {
      // An edit still waiting for its debounce (the HTML tab chosen right after typing) is not lost.
      if (timer !== undefined) {
        clearTimeout(timer);
        onChange(output());
      }
      editor.destroy();
    },
  };
}
