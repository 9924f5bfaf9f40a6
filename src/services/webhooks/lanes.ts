/**
 * Runs every lane's items (a lane: one project's calls) with `total` in all in
 * flight and each lane at most its share of them (`total` over the lanes that
 * still have items to start, at least `perLane`), starting the next item from
 * the lanes in turn: a lane of slow calls holds at most its share of the
 * slots, so it delays only itself; a lane left alone may use them all. `laneDone` runs as soon as a lane's last item
 * finished, with its results in the items' order; the returned promise settles
 * when every lane is done (rejects with the first failure of `work` or `laneDone`).
 * An item `shouldStart` refuses when its turn comes is skipped: its result is
 * undefined and it takes no slot.
 */
export function runLanes<K, T, R>(
  lanes: ReadonlyMap<K, readonly T[]>,
  limits: { perLane: number; total: number },
  work: (item: T) => Promise<R>,
  laneDone: (key: K, items: readonly T[], results: (R | undefined)[]) => Promise<void>,
  shouldStart: (item: T) => boolean = () => true,
): Promise<void> {
  const state = [...lanes].map(([key, items]) => ({ key, items, next: 0, inFlight: 0, finished: 0, results: new Array<R | undefined>(items.length) }));
  const pending = state.filter((lane) => lane.items.length > 0);
  if (pending.length === 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    let inFlight = 0;
    let turn = 0;
    let lanesLeft = pending.length;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      reject(err);
    };
    const finish = (lane: (typeof pending)[number]) => {
      laneDone(lane.key, lane.items, lane.results).then(() => {
        if (--lanesLeft === 0 && !failed) resolve();
      }, fail);
    };
    const pump = () => {
      while (!failed && inFlight < limits.total) {
        const starting = pending.filter((l) => l.next < l.items.length).length;
        const share = Math.max(limits.perLane, Math.ceil(limits.total / Math.max(1, starting)));
        let lane: (typeof pending)[number] | undefined;
        for (let i = 0; i < pending.length && !lane; i++) {
          const candidate = pending[(turn + i) % pending.length];
          if (candidate.next < candidate.items.length && candidate.inFlight < share) {
            lane = candidate;
            turn = (turn + i + 1) % pending.length;
          }
        }
        if (!lane) return;
        const current = lane;
        const index = current.next++;
        if (!shouldStart(current.items[index])) {
          if (++current.finished === current.items.length) finish(current);
          continue;
        }
        current.inFlight++;
        inFlight++;
        work(current.items[index]).then(
          (result) => {
            current.results[index] = result;
            current.inFlight--;
            inFlight--;
            if (++current.finished === current.items.length) finish(current);
            pump();
          },
          (err) => fail(err),
        );
      }
    };
    pump();
  });
}

/** Groups items by a key (a project: its lane), keeping their order. */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
