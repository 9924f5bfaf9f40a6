/** The rules of a send's attachments: counts, sizes, names and types (checked by schemas/send.ts). */

export const MAX_ATTACHMENTS = 10;

/** Largest raw message SES v2 accepts: 10 MB after MIME encoding (base64 attachments included). */
export const MAX_RAW_MESSAGE_BYTES = 10 * 1024 * 1024;

/** Bytes a base64 MIME part takes for `decodedBytes`: 4/3 for base64, plus CRLF every 76 characters. */
export function mimeEncodedSize(decodedBytes: number): number {
  const base64 = Math.ceil(decodedBytes / 3) * 4;
  return base64 + 2 * Math.ceil(base64 / 76);
}

/**
 * Attachments of one send may total 7,000,000 decoded bytes: what one email
 * can carry through the provider. Encoded they take 9,578,948 bytes, leaving
 * about 900 KB of the 10 MB raw limit for headers and the HTML and text parts.
 */
export const MAX_ATTACHMENT_BYTES = 7_000_000;

/** Headers, MIME boundaries and tracking rewrites, generously. */
const MIME_OVERHEAD_BYTES = 64 * 1024;

/** An upper estimate of the raw message size: attachments, plus the HTML part and a text part at most as large. */
export function estimateRawMessageSize(attachmentBytes: number[], htmlBytes: number): number {
  return attachmentBytes.reduce((sum, n) => sum + mimeEncodedSize(n), 0) + 2 * mimeEncodedSize(htmlBytes) + MIME_OVERHEAD_BYTES;
}

/** File types SES refuses to send (its documented unsupported attachment types). */
const BLOCKED_EXTENSIONS = new Set(
  (
    "ade adp app asp bas bat cer chm cmd com cpl crt csh der exe fxp gadget hlp hta inf ins isp its js jse ksh lib lnk " +
    "mad maf mag mam maq mar mas mat mau mav maw mda mdb mde mdt mdw mdz msc msh msh1 msh2 mshxml msh1xml msh2xml msi " +
    "msp mst ops pcd pif plg prf prg reg scf scr sct shb shs sys ps1 ps1xml ps2 ps2xml psc1 psc2 tmp url vb vbe vbs vps " +
    "vsmacros vss vst vsw vxd ws wsc wsf wsh xnk"
  ).split(" "),
);

/** Filenames go into MIME headers: no control characters, quotes or path separators. */
export const FILENAME_PATTERN = /^[^\u0000-\u001f\u007f"\\/]{1,255}$/;
export const CONTENT_TYPE_PATTERN = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i;
// A plain character class (no groups): megabytes of input without deep regex backtracking.
const BASE64_PATTERN = /^[A-Za-z0-9+/]*={0,2}$/;

export function blockedExtension(filename: string): string | null {
  const ext = filename.toLowerCase().split(".").pop() ?? "";
  return filename.includes(".") && BLOCKED_EXTENSIONS.has(ext) ? ext : null;
}

/** Decoded size of a base64 string, or null when it is not base64. Whitespace (line breaks) is allowed. */
export function base64DecodedSize(content: string): number | null {
  const compact = content.replace(/\s+/g, "");
  if (compact.length % 4 !== 0 || !BASE64_PATTERN.test(compact)) return null;
  const padding = compact.endsWith("==") ? 2 : compact.endsWith("=") ? 1 : 0;
  return (compact.length / 4) * 3 - padding;
}
