import { newId } from "../../lib/ids";
import { addObjectBytes, type ObjectBytes } from "./usage";

/**
 * Sent email bodies in R2 (prefix `bodies/`, kept EMAIL_HTML_RETENTION_DAYS): the send consumer
 * writes the HTML of a batch's sent emails (as sent: variables filled, tracking applied) one after
 * another as one object `bodies/<yyyy-mm-dd>/<object id>`, and each email's row keeps where its
 * body is (emails.body_ref, "<key>#<offset>,<length>" in bytes); GET /emails/{id} reads it back
 * with a ranged GET. A batch of large mail is cut into several objects of at most
 * BODY_OBJECT_BYTES, so an invocation never holds more than one such object's bodies.
 */

export const BODIES_PREFIX = "bodies/";

/** Bytes of bodies one object holds at most (a larger single body is an object of its own). */
export const BODY_OBJECT_BYTES = 8 * 1024 * 1024;

export interface BodyRef {
  key: string;
  offset: number;
  length: number;
}

export const formatBodyRef = (ref: BodyRef) => `${ref.key}#${ref.offset},${ref.length}`;

/** A body_ref's parts, or null when it is not one. */
export function parseBodyRef(text: string): BodyRef | null {
  const match = /^(bodies\/[^#]+)#(\d+),(\d+)$/.exec(text);
  return match ? { key: match[1], offset: Number(match[2]), length: Number(match[3]) } : null;
}

/** An object's key: its UTC day of writing (so a listing sorts oldest first) and a fresh id. */
export const bodyKey = (at: Date, id = newId()) => `${BODIES_PREFIX}${at.toISOString().slice(0, 10)}/${id}`;

/** What a batch's bodies became: each email's body_ref, and the bytes each project now keeps (for the r2_usage ledger). */
export interface StoredBodies {
  refs: Map<string, string>;
  bytes: ObjectBytes[];
}

interface Placed {
  emailId: string;
  projectId: string;
  offset: number;
  length: number;
}

const encoder = new TextEncoder();

/**
 * Collects the bodies of one consumer batch as their emails are sent and writes them as one
 * object (more when they pass `maxBytes`). `finish` puts what is left and waits for every put:
 * an email whose object could not be written has no ref (its HTML stays in D1, purged later).
 */
export class SentBodyWriter {
  private parts: Uint8Array[] = [];
  private placed: Placed[] = [];
  private size = 0;
  private readonly puts: Promise<{ key: string; placed: Placed[] }>[] = [];

  constructor(
    private readonly bucket: R2Bucket,
    private readonly at: Date,
    private readonly maxBytes = BODY_OBJECT_BYTES,
  ) {}

  add(emailId: string, projectId: string, html: string): void {
    const bytes = encoder.encode(html);
    if (this.size > 0 && this.size + bytes.length > this.maxBytes) this.flush();
    this.placed.push({ emailId, projectId, offset: this.size, length: bytes.length });
    this.parts.push(bytes);
    this.size += bytes.length;
  }

  /** Starts the put of what was collected (it runs while the batch goes on). */
  private flush(): void {
    if (this.placed.length === 0) return;
    const key = bodyKey(this.at);
    const body = new Uint8Array(this.size);
    let at = 0;
    for (const part of this.parts) {
      body.set(part, at);
      at += part.length;
    }
    const placed = this.placed;
    this.parts = [];
    this.placed = [];
    this.size = 0;
    this.puts.push(
      this.bucket.put(key, body, { httpMetadata: { contentType: "text/html; charset=utf-8" } }).then(
        () => ({ key, placed }),
        (err: unknown) => {
          console.error(`writing sent bodies ${key} failed; their HTML stays in D1`, err);
          return { key, placed: [] };
        },
      ),
    );
  }

  /** Puts the rest and waits for every object; what was written, by email. */
  async finish(): Promise<StoredBodies> {
    this.flush();
    const refs = new Map<string, string>();
    const perProject = new Map<string, number>();
    for (const { key, placed } of await Promise.all(this.puts)) {
      for (const p of placed) {
        refs.set(p.emailId, formatBodyRef({ key, offset: p.offset, length: p.length }));
        perProject.set(p.projectId, (perProject.get(p.projectId) ?? 0) + p.length);
      }
    }
    return { refs, bytes: [...perProject].map(([projectId, bytes]) => ({ projectId, prefix: BODIES_PREFIX, bytes })) };
  }
}

/** The r2_usage statements for stored bodies (25 projects per statement), for the batch that records their refs. */
export function addBodyBytes(d1: D1Database, stored: StoredBodies, at: Date): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < stored.bytes.length; i += 25) {
    const statement = addObjectBytes(d1, stored.bytes.slice(i, i + 25), at);
    if (statement) statements.push(statement);
  }
  return statements;
}

/** One body by its ref (a ranged GET); null when the ref is not one or its object is gone (expired). */
export async function readBody(bucket: R2Bucket, bodyRef: string): Promise<string | null> {
  const ref = parseBodyRef(bodyRef);
  if (!ref) return null;
  if (ref.length === 0) return (await bucket.head(ref.key)) ? "" : null;
  const object = await bucket.get(ref.key, { range: { offset: ref.offset, length: ref.length } });
  return object ? object.text() : null;
}

/** bodies.ts holds no SQL (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
