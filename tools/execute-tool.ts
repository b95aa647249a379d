import type { Tool } from './tool.ts';

/** How one execution ended. */
export type ExecutionResult =
  | { kind: 'returned'; value: unknown }
  /** `afterStop`: the run's abort signal had fired when the tool threw. */
  | { kind: 'threw'; error: unknown; afterStop: boolean }
  /** The tool's `timeoutMs` passed first; its signal was aborted and its result is ignored. */
  | { kind: 'timeout' }
  /** The run stopped and the tool did not finish within the grace period; result ignored. */
  | { kind: 'abandoned' };

/**
 * Runs a tool's `execute` once under its timeout and the run's abort signal. Never rejects.
 * The signal `execute` receives aborts on stop and on timeout. After a stop, the tool gets
 * `stopGraceMs` to finish; past that (or past its timeout) the execution is given up and
 * whatever the tool does later is ignored.
 */
export function executeTool({
  tool,
  input,
  callId,
  sessionId,
  idempotencyKey,
  signal: runSignal,
  stopGraceMs,
}: {
  tool: Pick<Tool, 'execute' | 'timeoutMs'>;
  input: unknown;
  callId: string;
  sessionId: string;
  idempotencyKey: string;
  signal: AbortSignal;
  stopGraceMs: number;
}): Promise<ExecutionResult> {
  return new Promise<ExecutionResult>((resolve) => {
    const timeoutController = new AbortController();
    const signal = AbortSignal.any([runSignal, timeoutController.signal]);
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    let timeoutTimer: ReturnType<typeof setTimeout> | undefined;
    let finished = false;

    const finish = (result: ExecutionResult) => {
      if (finished) return;
      finished = true;
      clearTimeout(timeoutTimer);
      clearTimeout(graceTimer);
      runSignal.removeEventListener('abort', onStop);
      resolve(result);
    };
    const onStop = () => {
      graceTimer = setTimeout(() => finish({ kind: 'abandoned' }), stopGraceMs);
    };
    timeoutTimer = setTimeout(() => {
      timeoutController.abort(
        new DOMException(`The tool did not finish within ${tool.timeoutMs} ms`, 'TimeoutError'),
      );
      finish({ kind: 'timeout' });
    }, tool.timeoutMs);

    if (runSignal.aborted) onStop();
    else runSignal.addEventListener('abort', onStop, { once: true });

    let pending: Promise<unknown>;
    try {
      pending = Promise.resolve(tool.execute(input, { signal, callId, sessionId, idempotencyKey }));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => finish({ kind: 'returned', value }),
      (error: unknown) => finish({ kind: 'threw', error, afterStop: runSignal.aborted }),
    );
  });
}
