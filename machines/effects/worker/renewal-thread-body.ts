import { parentPort, workerData } from 'node:worker_threads';
import type { LeaseRenewer, RunLease } from '../../../store/run-leases.ts';

/** What the main thread tells its renewal thread. */
export type ToRenewalThread =
  | { type: 'hold'; lease: RunLease }
  | { type: 'drop'; runId: string; epoch: number }
  | { type: 'close' };

/** What the renewal thread tells the main thread. */
export type FromRenewalThread =
  | { type: 'ready' }
  | { type: 'lost'; leases: RunLease[] }
  | { type: 'failed'; count: number; message: string }
  | { type: 'unopened'; message: string };

/** The thread's `workerData`. */
export interface RenewalThreadData {
  kind: 'turnlog-renewal-thread';
  /** The store's renewer module (`LeaseRenewalThread.module`) and its options. */
  module: string;
  options: unknown;
  leaseMs: number;
  /** One Int32 the main thread adds 1 to on each turn of its heartbeat timer. */
  beats: SharedArrayBuffer;
  /** The main thread is taken as hung once no beat came for this long: no more renewals. */
  stallMs: number;
}

/**
 * The renewal thread's work (machines/effects/worker/renewal-thread.ts starts it): the leases the
 * main thread holds, renewed every `leaseMs / 3` in one statement over the thread's own
 * connection, whatever the main thread's event loop is busy with. A lease found lost is dropped
 * and reported; a failed renewal is reported and tried again at the next tick, as the main
 * thread's own renewal did. While the main thread's heartbeat has stopped for `stallMs` (a hung
 * main thread, not a busy one) nothing is renewed: its leases lapse as if it had died.
 */
export class ThreadRenewals {
  readonly #renewer: LeaseRenewer;
  readonly #data: RenewalThreadData;
  readonly #post: (message: FromRenewalThread) => void;
  readonly #now: () => number;
  readonly #beats: Int32Array;
  // Per run: the lease as the main thread last said it holds it.
  readonly #held = new Map<string, RunLease>();
  #renewing = false;
  #lastBeat: number;
  #beatSeenAt: number;

  constructor(options: {
    renewer: LeaseRenewer;
    data: RenewalThreadData;
    post: (message: FromRenewalThread) => void;
    now: () => number;
  }) {
    this.#renewer = options.renewer;
    this.#data = options.data;
    this.#post = options.post;
    this.#now = options.now;
    this.#beats = new Int32Array(options.data.beats);
    this.#lastBeat = Atomics.load(this.#beats, 0);
    this.#beatSeenAt = this.#now();
  }

  /** Applies a message of the main thread (a lease taken or given up). */
  receive(message: ToRenewalThread): void {
    if (message.type === 'hold') this.#held.set(message.lease.runId, message.lease);
    if (message.type === 'drop' && this.#held.get(message.runId)?.epoch === message.epoch) {
      this.#held.delete(message.runId);
    }
  }

  /** One renewal of every held lease (none while one is in flight, or the main thread hangs). */
  async tick(): Promise<void> {
    if (this.#renewing || this.#held.size === 0 || this.#mainHangs()) return;
    this.#renewing = true;
    const leases = [...this.#held.values()];
    try {
      const { leaseMs } = this.#data;
      const { lost } = await this.#renewer.renewLeases({ leases, leaseMs });
      // Only a lease still held as it was sent (not dropped or replaced meanwhile).
      const gone = lost.filter((lease) => this.#held.get(lease.runId)?.epoch === lease.epoch);
      for (const lease of gone) this.#held.delete(lease.runId);
      if (gone.length > 0) this.#post({ type: 'lost', leases: gone });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#post({ type: 'failed', count: leases.length, message });
    } finally {
      this.#renewing = false;
    }
  }

  close(): Promise<void> {
    this.#held.clear();
    return this.#renewer.close();
  }

  /** True once the main thread's heartbeat stopped for `stallMs`. */
  #mainHangs(): boolean {
    const beat = Atomics.load(this.#beats, 0);
    const now = this.#now();
    if (beat !== this.#lastBeat) {
      this.#lastBeat = beat;
      this.#beatSeenAt = now;
    }
    return now - this.#beatSeenAt > this.#data.stallMs;
  }
}

/** The thread's start: open the store's renewer, then renew on a timer until told to close. */
async function runThread(): Promise<void> {
  const port = parentPort;
  if (port === null) return;
  const data = workerData as RenewalThreadData;
  const post = (message: FromRenewalThread) => port.postMessage(message);
  let renewals: ThreadRenewals;
  try {
    const { openLeaseRenewer } = (await import(data.module)) as {
      openLeaseRenewer: (options: unknown) => Promise<LeaseRenewer>;
    };
    const renewer = await openLeaseRenewer(data.options);
    renewals = new ThreadRenewals({ renewer, data, post, now: () => performance.now() });
  } catch (error) {
    post({ type: 'unopened', message: error instanceof Error ? error.message : String(error) });
    port.close();
    return;
  }
  const timer = setInterval(() => void renewals.tick(), Math.max(1, Math.floor(data.leaseMs / 3)));
  port.on('message', (message: ToRenewalThread) => {
    if (message.type !== 'close') {
      renewals.receive(message);
      return;
    }
    clearInterval(timer);
    void renewals.close().finally(() => port.close());
  });
  post({ type: 'ready' });
}

if (
  parentPort !== null &&
  (workerData as RenewalThreadData | undefined)?.kind === 'turnlog-renewal-thread'
) {
  await runThread();
}
