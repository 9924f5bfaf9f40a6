/**
 * A bounded in-memory cache whose entries expire once more than `ttlMs` has passed since they were set:
 * at most `max` entries, the least recently used dropped first (a Map keeps
 * insertion order; a read moves the entry to the end). `now` is injectable so
 * tests move the clock instead of waiting. Written here to keep the bundle small.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();

  constructor(private readonly options: { max: number; ttlMs: number; now?: () => number }) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expires < this.now()) return undefined; // valid up to and including ttlMs
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    while (this.entries.size >= this.options.max) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, expires: this.now() + this.options.ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
