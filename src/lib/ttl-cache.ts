export interface TtlCacheOptions<V> {
  /** Most entries kept. */
  max: number;
  /** How long an entry lives (Infinity: until evicted); `set` may give one entry its own. */
  ttlMs: number;
  /** The clock (default Date.now); tests move it instead of waiting. */
  now?: () => number;
  /** With `size`: the most the entries may weigh together; an entry heavier than this alone is not kept. */
  maxSize?: number;
  /** An entry's weight (bytes, say), for `maxSize`. */
  size?: (value: V) => number;
}

/**
 * The one bounded in-memory cache of the code: entries expire once more than
 * their TTL has passed since they were set; at most `max` entries (and
 * `maxSize` of weight), the least recently used dropped first (a Map keeps
 * insertion order; a read moves the entry to the end). Written here to keep
 * the bundle small.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number; size: number }>();
  private weight = 0;

  constructor(private readonly options: TtlCacheOptions<V>) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.remove(key);
    if (entry.expires < this.now()) return undefined; // valid up to and including its TTL
    this.entries.set(key, entry);
    this.weight += entry.size;
    return entry.value;
  }

  set(key: K, value: V, ttlMs = this.options.ttlMs): void {
    this.remove(key);
    const size = this.options.size?.(value) ?? 0;
    const maxSize = this.options.maxSize ?? Number.POSITIVE_INFINITY;
    if (size > maxSize) return;
    while (this.entries.size > 0 && (this.entries.size >= this.options.max || this.weight + size > maxSize)) {
      this.remove(this.entries.keys().next().value as K);
    }
    this.entries.set(key, { value, expires: this.now() + ttlMs, size });
    this.weight += size;
  }

  delete(key: K): void {
    this.remove(key);
  }

  clear(): void {
    this.entries.clear();
    this.weight = 0;
  }

  get size(): number {
    return this.entries.size;
  }

  private remove(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.weight -= entry.size;
  }
}
