/** A benchmark's result as printed by `bench/run.ts`: a title, column headers and rows of cells. */
export interface BenchTable {
  title: string;
  columns: string[];
  rows: string[][];
  /** Lines printed under the table (what was measured, caveats). */
  notes?: string[];
}

/** Formats a table as GitHub-flavoured markdown, so a run's output pastes into RESULTS.md. */
export function formatTable(table: BenchTable): string {
  const widths = table.columns.map((column, index) =>
    Math.max(column.length, ...table.rows.map((row) => row[index]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${widths.map((width, index) => (cells[index] ?? '').padEnd(width)).join(' | ')} |`;
  return [
    `### ${table.title}`,
    '',
    line(table.columns),
    `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`,
    ...table.rows.map(line),
    ...(table.notes === undefined || table.notes.length === 0
      ? []
      : ['', ...table.notes.map((note) => `- ${note}`)]),
  ].join('\n');
}

/** Milliseconds with a precision that suits their size. */
export function formatMs(value: number): string {
  return value >= 100
    ? `${value.toFixed(0)} ms`
    : value >= 1
      ? `${value.toFixed(2)} ms`
      : `${value.toFixed(3)} ms`;
}

/** Bytes as B / KiB / MiB. */
export function formatBytes(value: number): string {
  if (value < 1024) return `${value.toFixed(0)} B`;
  if (value < 1024 * 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${(value / 1024 / 1024).toFixed(2)} MiB`;
}
