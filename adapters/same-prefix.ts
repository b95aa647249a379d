/**
 * How many leading items of `items` are the very objects (`===`) that `previous` starts with.
 * A run's requests reuse the previous request's message objects, so this finds what is new in
 * a request with pointer comparisons only: no message is read, hashed or serialized.
 */
export function samePrefixLength(items: readonly unknown[], previous: readonly unknown[]): number {
  const length = Math.min(items.length, previous.length);
  let index = 0;
  while (index < length && items[index] === previous[index]) index += 1;
  return index;
}
