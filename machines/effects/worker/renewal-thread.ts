import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LeaseRenewalThread, RunLease } from '../../../store/run-leases.ts';
import type {
  FromRenewalThread,
  RenewalThreadData,
  ToRenewalThread,
} from './renewal-thread-body.ts';

/**
 * How long the main thread's event loop may not turn before its renewal thread takes it as hung
 * and lets its leases lapse: a minute, or 4 × `leaseMs` when that is longer. A busy loop (a 50 MB
 * tool output's JSON, a tool that blocks) is shorter; a loop that never comes back is not.
 */
export function stallMsOf(leaseMs: number): number {
  return Math.max(60_000, 4 * leaseMs);
}

/** What a renewal thread is started with (`new RenewalThread`). */
export interface RenewalThreadOptions {
  /** The store's renewer (`RunLeases.leaseRenewalThread()`). */
  renewal: LeaseRenewalThread;
  leaseMs: number;
  /** The thread renews from now on: the main thread's own renewal timer may stop. */
  onReady: () => void;
  /** The thread found these leases gone (expired, released or taken over). */
  onLost: (leases: RunLease[]) => void;
  /** A renewal of `count` leases failed (the database is away): tried again at the next tick. */
  onFailed: (count: number, error: Error) => void;
  /** The thread ended without being closed, or never opened: the main thread renews again. */
  onGone: (error: Error) => void;
}

/**
 * The main thread's side of a worker's renewal thread (renewal-thread-body.ts): a `worker_threads`
 * Worker with a database connection of its own that renews the leases this worker holds, so no
 * work on the main event loop starves a renewal (issue 26, defect 5). The main thread tells it
 * each lease it takes (`hold`) and gives up (`drop`), and beats a shared counter on a timer the
 * thread watches. The Worker is unref'd and dies with the process (a SIGKILLed worker's leases
 * simply expire); `close()` ends it.
 */
export class RenewalThread {
  readonly #options: RenewalThreadOptions;
  readonly #worker: Worker;
  readonly #beats = new Int32Array(new SharedArrayBuffer(4));
  readonly #beatTimer: ReturnType<typeof setInterval>;
  #closing = false;
  readonly #exited: Promise<void>;

  constructor(options: RenewalThreadOptions) {
    this.#options = options;
    const data: RenewalThreadData = {
      kind: 'turnlog-renewal-thread',
      module: options.renewal.module,
      options: options.renewal.options,
      leaseMs: options.leaseMs,
      beats: this.#beats.buffer as SharedArrayBuffer,
      stallMs: stallMsOf(options.leaseMs),
    };
    const extension = extname(fileURLToPath(import.meta.url));
    this.#worker = new Worker(new URL(`./renewal-thread-body${extension}`, import.meta.url), {
      workerData: data,
    });
    this.#worker.unref();
    this.#worker.on('message', (message: FromRenewalThread) => this.#receive(message));
    // An exception in the thread is an 'error' event here: never an uncaught one.
    let failure: Error | undefined;
    this.#worker.on('error', (error) => {
      failure = error;
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', (code) => {
        clearInterval(this.#beatTimer);
        if (!this.#closing) {
          this.#options.onGone(
            failure ?? new Error(`the lease renewal thread exited (code ${code})`),
          );
        }
        resolve();
      });
    });
    this.#beatTimer = setInterval(
      () => Atomics.add(this.#beats, 0, 1),
      Math.max(1, Math.floor(options.leaseMs / 3)),
    );
    this.#beatTimer.unref();
  }

  /** The thread renews this lease from now on (in place of one it held for the run). */
  hold(lease: RunLease): void {
    this.#send({ type: 'hold', lease });
  }

  /** The thread renews this lease no more (the run is given up, parked or ended). */
  drop(lease: RunLease): void {
    this.#send({ type: 'drop', runId: lease.runId, epoch: lease.epoch });
  }

  /** Ends the thread: it ends its connection, or is stopped after `waitMs`. */
  async close(waitMs = 2_000): Promise<void> {
    if (this.#closing) return this.#exited;
    this.#closing = true;
    clearInterval(this.#beatTimer);
    this.#send({ type: 'close' });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), waitMs);
    });
    const ended = await Promise.race([this.#exited, late]);
    clearTimeout(timer);
    if (ended === 'late') await this.#worker.terminate();
  }

  #send(message: ToRenewalThread): void {
    try {
      this.#worker.postMessage(message);
    } catch {
      // The thread is gone: the main thread renews again (onGone).
    }
  }

  #receive(message: FromRenewalThread): void {
    switch (message.type) {
      case 'ready':
        this.#options.onReady();
        return;
      case 'lost':
        this.#options.onLost(message.leases);
        return;
      case 'failed':
        this.#options.onFailed(message.count, new Error(message.message));
        return;
      case 'unopened':
        this.#closing = true;
        this.#options.onGone(
          new Error(`the lease renewal thread did not open: ${message.message}`),
        );
        return;
      default: {
        const unknown: never = message;
        throw new Error(`renewal thread: unknown message ${JSON.stringify(unknown)}`);
      }
    }
  }
}
