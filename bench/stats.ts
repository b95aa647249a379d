/** The median of a non-empty list of numbers (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median: no values were measured');
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Runs `work` and returns its wall-clock time in milliseconds. */
export async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** CPU time this process has used so far (user + system, every thread), in milliseconds. */
export function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * Times every side in interleaved rounds (the order rotates each round, so no side always runs
 * on a warmer or fuller heap), drops the warm-up rounds, and returns each side's samples
 * (wall-clock ms). With `cpu`, each sample's CPU time is pushed there too: on a loaded machine
 * wall time also counts the time the process waited for a core, which penalizes a side that
 * goes back to the event loop more often; CPU time does not. `prepare` runs untimed before each
 * run of its side (to build what that run needs, such as a store seeded with a long session).
 */
export async function interleave<TName extends string>(options: {
  sides: Record<TName, () => Promise<unknown>>;
  rounds: number;
  warmup: number;
  cpu?: Record<TName, number[]>;
  prepare?: Partial<Record<TName, () => Promise<unknown>>>;
}): Promise<Record<TName, number[]>> {
  const names = Object.keys(options.sides) as TName[];
  const samples = Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<
    TName,
    number[]
  >;
  for (let round = 0; round < options.warmup + options.rounds; round += 1) {
    const order = names.map((_, index) => names[(index + round) % names.length] as TName);
    for (const name of order) {
      await options.prepare?.[name]?.();
      const cpuBefore = cpuMs();
      const elapsed = await timed(options.sides[name]);
      const cpu = cpuMs() - cpuBefore;
      if (round < options.warmup) continue;
      samples[name].push(elapsed);
      options.cpu?.[name].push(cpu);
    }
  }
  return samples;
}

/** One empty sample list per side, for `interleave`'s `cpu` option. */
export function sampleLists<TName extends string>(
  names: readonly TName[],
): Record<TName, number[]> {
  return Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<TName, number[]>;
}
