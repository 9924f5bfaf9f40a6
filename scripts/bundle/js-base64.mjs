// Stands in for js-base64 in the deployed bundle (wrangler.toml [alias]). Its only
// importer, mimetext's browser build, calls Base64.encode (UTF-8 text to base64) and
// Base64.encodeURI (the URL-safe form without padding); workerd has btoa and
// TextEncoder, so the library's 4 KB of polyfills and helpers are not needed.
function encode(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export const Base64 = {
  encode,
  encodeURI: (text) =>
    encode(text)
      .replace(/[+/]/g, (c) => (c === "+" ? "-" : "_"))
      .replace(/=+$/, ""),
};
