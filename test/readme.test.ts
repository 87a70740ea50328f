import { readFileSync } from 'node:fs';
import t from 'tap';
import { describeOptions } from '../src/config.js';
import { startTestServer } from './helpers/server.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** Rows of the operation table: `| \`/v2/a\`, \`/v1/a\` | auth | status | notes |`. */
function operationRows(): Array<{ paths: string[]; status: string }> {
  const rows: Array<{ paths: string[]; status: string }> = [];
  for (const line of readme.split('\n')) {
    if (!line.startsWith('| `/v')) continue;
    const cells = line.split('|').map((cell) => cell.trim());
    const paths = [...(cells[1] ?? '').matchAll(/`(\/v[12]\/[^`]+)`/g)].map((match) => match[1] ?? '');
    rows.push({ paths, status: cells[3] ?? '' });
  }
  return rows;
}

t.test('the README operation table says done for exactly the paths the server serves', async (t) => {
  const { server } = await startTestServer(t);
  const rows = operationRows();
  t.ok(rows.length > 50, 'the table lists the whole interface');
  const done = new Set(rows.filter((row) => row.status === 'done').flatMap((row) => row.paths));
  const listed = new Set(rows.flatMap((row) => row.paths));
  for (const path of server.paths) t.ok(done.has(path), `${path} is served and marked done`);
  for (const path of done) t.ok(server.paths.includes(path), `${path} is marked done and served`);
  t.equal(listed.size, rows.reduce((sum, row) => sum + row.paths.length, 0), 'no path is listed twice');
  for (const row of rows) t.match(row.status, /^(done|not yet|partial)$/, `status of ${row.paths.join(', ')}`);
});

t.test('the README configuration table lists every option with its flag and default', async (t) => {
  for (const option of describeOptions()) {
    const fallback = option.fallback === 'undefined' ? '(none)' : `\`${option.fallback}\``;
    t.ok(readme.includes(`| \`${option.env}\` | \`${option.flag}\` | ${fallback} |`), `${option.env} row`);
  }
});
