/**
 * Streaming k-way merge of per-source event batches by timestamp. Each source's own order is kept
 * (its head is only compared, never reordered), ties go by source order, and only one batch per
 * source is held at a time. Each merged batch says which source each event came from.
 */
import type { LockEvent } from '../model/event.js';

const OUT_BATCH = 4096;

export interface MergedBatch {
  events: LockEvent[];
  /** The index of the source of each event, or of all of them. */
  from: number[] | number;
}

export async function* mergeByTime(sources: AsyncIterable<LockEvent[]>[]): AsyncGenerator<MergedBatch> {
  if (sources.length === 1) {
    for await (const events of sources[0]!) yield { events, from: 0 };
    return;
  }
  const iters = sources.map((s) => s[Symbol.asyncIterator]());
  const batch: (LockEvent[] | undefined)[] = new Array(iters.length);
  const pos: number[] = new Array(iters.length).fill(0);
  const live: boolean[] = new Array(iters.length).fill(true);
  // Fill every head (a source may yield empty batches).
  const refill = async (i: number): Promise<void> => {
    for (;;) {
      const r = await iters[i]!.next();
      if (r.done) {
        live[i] = false;
        batch[i] = undefined;
        return;
      }
      if (r.value.length > 0) {
        batch[i] = r.value;
        pos[i] = 0;
        return;
      }
    }
  };
  try {
    yield* mergeHeads(iters, batch, pos, live, refill);
  } finally {
    // Stopped early (an error in one source, --strict, or the consumer gave up): close every
    // source, so that their readers and parsing worker threads end too.
    await Promise.all(iters.map((it) => it.return?.(undefined).catch(() => undefined)));
  }
}

async function* mergeHeads(
  iters: AsyncIterator<LockEvent[]>[],
  batch: (LockEvent[] | undefined)[],
  pos: number[],
  live: boolean[],
  refill: (i: number) => Promise<void>,
): AsyncGenerator<MergedBatch> {
  await Promise.all(iters.map((_, i) => refill(i)));
  let out: LockEvent[] = [];
  let from: number[] = [];
  for (;;) {
    let best = -1;
    let bestTs = 0;
    for (let i = 0; i < iters.length; i++) {
      if (!live[i]) continue;
      const ts = batch[i]![pos[i]!]!.ts;
      if (best === -1 || ts < bestTs) {
        best = i;
        bestTs = ts;
      }
    }
    if (best === -1) break;
    out.push(batch[best]![pos[best]!]!);
    from.push(best);
    if (++pos[best]! >= batch[best]!.length) {
      if (out.length > 0) {
        yield { events: out, from };
        out = [];
        from = [];
      }
      await refill(best);
    } else if (out.length >= OUT_BATCH) {
      yield { events: out, from };
      out = [];
      from = [];
    }
  }
  if (out.length > 0) yield { events: out, from };
}
