/**
 * The last row of each address in an upload, in typed arrays rather than a Map of strings:
 * 12 bytes a slot, at most 70 % full (24 MiB at a million addresses, 48 MiB at two million,
 * the most a 50 MB file holds). Keys are compared by two independent 32-bit hashes (64 bits):
 * two different addresses of one file are taken for one with a chance of about n²/2⁶⁵
 * (1 in 10⁷ at 2 M rows).
 */
export class LastRows {
  /** Slots of [hashA, hashB, row]; row 0 = empty (rows start at 1). */
  private slots: Uint32Array;
  private mask: number;
  private count = 0;

  constructor(capacity = 1 << 12) {
    this.slots = new Uint32Array(capacity * 3);
    this.mask = capacity - 1;
  }

  /** Records `row` as the key's last row; returns the row it replaces (0 when the key is new). */
  set(key: string, row: number): number {
    const [a, b] = hashes(key);
    const replaced = this.place(this.slots, this.mask, a, b, row);
    if (replaced === 0 && ++this.count * 10 > (this.mask + 1) * 7) this.grow();
    return replaced;
  }

  private place(slots: Uint32Array, mask: number, a: number, b: number, row: number): number {
    for (let i = a & mask; ; i = (i + 1) & mask) {
      const at = i * 3;
      const old = slots[at + 2];
      if (old === 0) {
        slots[at] = a;
        slots[at + 1] = b;
        slots[at + 2] = row;
        return 0;
      }
      if (slots[at] === a && slots[at + 1] === b) {
        slots[at + 2] = row;
        return old;
      }
    }
  }

  private grow() {
    const capacity = (this.mask + 1) * 2;
    const slots = new Uint32Array(capacity * 3);
    const mask = capacity - 1;
    for (let at = 0; at < this.slots.length; at += 3) {
      if (this.slots[at + 2] !== 0) this.place(slots, mask, this.slots[at], this.slots[at + 1], this.slots[at + 2]);
    }
    this.slots = slots;
    this.mask = mask;
  }
}

/** FNV-1a and a multiplicative hash with another seed, over the UTF-16 code units. */
function hashes(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  a ^= a >>> 16;
  a = Math.imul(a, 0x85ebca6b);
  a ^= a >>> 13;
  b = Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  b ^= b >>> 16;
  return [a >>> 0, b >>> 0];
}
