/**
 * Uploaded import files in R2 (prefix `imports/`, kept IMPORT_FILE_DAYS): the CSV as uploaded,
 * `imports/<projectId>/<importId>.csv`. The upload writes it as it reads it (ImportFileWriter);
 * each chunk consumer reads its rows' byte range back (readImportRange). Its bytes count in the
 * project's r2_usage under the prefix, added by the batch that starts the import.
 */

export const IMPORTS_PREFIX = "imports/";

export const importKey = (projectId: string, importId: string) => `${IMPORTS_PREFIX}${projectId}/${importId}.csv`;

/** Bytes of each multipart part but the last (R2 wants parts of one size, at least 5 MiB). */
export const IMPORT_PART_BYTES = 5 * 1024 * 1024;

/**
 * Writes a file given piece by piece without holding more than one part: a file smaller than
 * a part is one put at `finish`; a larger one a multipart upload of IMPORT_PART_BYTES parts.
 * `abort` drops whatever was written.
 */
export class ImportFileWriter {
  private pieces: Uint8Array[] = [];
  private held = 0;
  private upload: R2MultipartUpload | null = null;
  private readonly parts: R2UploadedPart[] = [];
  private put = false;
  /** Bytes given so far. */
  size = 0;

  constructor(
    private readonly bucket: R2Bucket,
    readonly key: string,
    private readonly partBytes = IMPORT_PART_BYTES,
  ) {}

  /** Takes the next bytes; uploads a part once one is full (the caller awaits it: backpressure). */
  async write(bytes: Uint8Array): Promise<void> {
    this.pieces.push(bytes);
    this.held += bytes.byteLength;
    this.size += bytes.byteLength;
    while (this.held >= this.partBytes) await this.uploadPart(this.take(this.partBytes));
  }

  /** Puts what is left; the object exists once this resolves. */
  async finish(): Promise<void> {
    const rest = this.take(this.held);
    this.put = true;
    if (!this.upload) {
      await this.bucket.put(this.key, rest);
      return;
    }
    if (rest.byteLength > 0) await this.uploadPart(rest);
    await this.upload.complete(this.parts);
  }

  /** Drops the upload or the object (best effort: an object left over expires by the prefix's lifecycle). */
  async abort(): Promise<void> {
    this.pieces = [];
    this.held = 0;
    try {
      if (this.put) await this.bucket.delete(this.key);
      else if (this.upload) await this.upload.abort();
    } catch (err) {
      console.error("dropping an import file failed; the lifecycle rule removes it", err);
    }
  }

  private async uploadPart(bytes: Uint8Array): Promise<void> {
    this.upload ??= await this.bucket.createMultipartUpload(this.key);
    this.parts.push(await this.upload.uploadPart(this.parts.length + 1, bytes));
  }

  /** The first `n` held bytes as one array. */
  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const piece = this.pieces[0];
      const want = n - at;
      if (piece.byteLength <= want) {
        out.set(piece, at);
        at += piece.byteLength;
        this.pieces.shift();
      } else {
        out.set(piece.subarray(0, want), at);
        this.pieces[0] = piece.subarray(want);
        at += want;
      }
    }
    this.held -= n;
    return out;
  }
}

/** The bytes [start, end) of an import's file, or null when the object is gone (expired). */
export async function readImportRange(bucket: R2Bucket, key: string, start: number, end: number): Promise<Uint8Array | null> {
  const object = await bucket.get(key, { range: { offset: start, length: end - start } });
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
}

/** No SQL here (test/store/statements.test.ts asks every store module). */
export const FIXED_SQL = {};
