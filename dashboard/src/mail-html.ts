/** The open-tracking pixel's path (src/routes/tracking-links.ts `/t/o/{emailId}`). */
const OPEN_PIXEL = /^\/t\/o\/[^/]+$/;

/**
 * A sent message's HTML without its open-tracking pixel: looking at an email in the dashboard
 * must not record an open (in production the pixel's https URL would load in the frame).
 */
export function withoutOpenPixel(html: string): string {
  const doc = new DOMParser().parseFromString(html, "text/html");
  let removed = 0;
  for (const img of doc.querySelectorAll("img[src]")) {
    try {
      if (OPEN_PIXEL.test(new URL(img.getAttribute("src") ?? "", location.href).pathname)) {
        img.remove();
        removed++;
      }
    } catch {
      // not a URL: not the pixel
    }
  }
  return removed === 0 ? html : `<!doctype html>${doc.documentElement.outerHTML}`;
}
