/**
 * Aborts when a provider stream has been silent for `ms` (no part since the request was sent or
 * since the last part). A stalled stream then ends the step as a `timeout` failure instead of
 * holding the run until someone stops it.
 */
export function createIdleTimeout(ms: number | undefined) {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const fire = () =>
    controller.abort(new DOMException(`The provider sent nothing for ${ms} ms.`, 'TimeoutError'));
  const arm = () => {
    if (ms === undefined || controller.signal.aborted) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(fire, ms);
  };
  arm();
  return {
    signal: controller.signal,
    /** Something arrived: the silence starts again. */
    touch: arm,
    /** The step is over: no timeout can fire any more. */
    clear() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
    get fired() {
      return controller.signal.aborted;
    },
  };
}
