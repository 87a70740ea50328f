// Test helper: the README's operation table, row by row.
import { readFileSync } from 'node:fs';

export const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** Rows of the operation table: `| \`/v2/a\`, \`/v1/a\` | auth | status | notes |`. */
export function operationRows(): Array<{ paths: string[]; auth: string; status: string }> {
  const rows: Array<{ paths: string[]; auth: string; status: string }> = [];
  for (const line of readme.split('\n')) {
    if (!line.startsWith('| `/v')) continue;
    const cells = line.split('|').map((cell) => cell.trim());
    const paths = [...(cells[1] ?? '').matchAll(/`(\/v[12]\/[^`]+)`/g)].map((match) => match[1] ?? '');
    rows.push({ paths, auth: cells[2] ?? '', status: cells[3] ?? '' });
  }
  return rows;
}
