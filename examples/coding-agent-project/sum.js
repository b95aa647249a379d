/** Adds up a list of numbers. */
export function sum(numbers) {
  let total = 0;
  for (let index = 1; index < numbers.length; index += 1) total += numbers[index];
  return total;
}
