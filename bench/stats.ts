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

/**
 * Times every side in interleaved rounds (the order rotates each round, so no side always runs
 * on a warmer or fuller heap), drops the warm-up rounds, and returns each side's samples.
 */
export async function interleave<TName extends string>(options: {
  sides: Record<TName, () => Promise<unknown>>;
  rounds: number;
  warmup: number;
}): Promise<Record<TName, number[]>> {
  const names = Object.keys(options.sides) as TName[];
  const samples = Object.fromEntries(names.map((name) => [name, []])) as unknown as Record<
    TName,
    number[]
  >;
  for (let round = 0; round < options.warmup + options.rounds; round += 1) {
    const order = names.map((_, index) => names[(index + round) % names.length] as TName);
    for (const name of order) {
      const elapsed = await timed(options.sides[name]);
      if (round >= options.warmup) samples[name].push(elapsed);
    }
  }
  return samples;
}
