/** Rows as aligned columns, each cell cut to `max` characters (the last column is not padded). */
export function textTable(rows: readonly (readonly string[])[], max = 48): string[] {
  const cut = rows.map((row) =>
    row.map((cell) => {
      const flat = cell.replaceAll('\n', ' ');
      return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
    }),
  );
  const widths: number[] = [];
  for (const row of cut) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return cut.map((row) =>
    row
      .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
