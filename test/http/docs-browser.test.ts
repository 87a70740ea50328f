import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import t from 'tap';
import { chromiumPath, NO_CHROMIUM } from '../helpers/chromium.js';
import { startTestServer } from '../helpers/server.js';

const executablePath = chromiumPath();

t.test('/docs renders the API reference in Chromium, loading nothing from outside the server', { skip: executablePath === undefined ? NO_CHROMIUM : false }, async (t) => {
  const { url } = await startTestServer(t);
  const browser = await chromium.launch({ executablePath: executablePath ?? '', args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${url}/docs`);
  // Tags start collapsed (hundreds of operations render slowly at once): open the crdt tag, as a reader would.
  await page.locator('.opblock-tag[data-tag="crdt"]').click({ timeout: 30_000 });
  const row = page.locator('.opblock-summary-path[data-path="/v2/crdt/get"]');
  await row.waitFor({ timeout: 30_000 });
  await page.locator('.opblock-tag[data-tag="presence"]').click();
  await page.locator('.opblock-summary-path[data-path="/v2/presence/update"]').waitFor({ timeout: 30_000 });
  t.equal(await page.locator('.opblock-summary-path[data-path="/v2/presence/update"]').count(), 1, 'Update Presence is listed');
  t.match(await page.locator('.info .title').innerText(), /Plait/);
  await row.click();
  await page.locator('.opblock.is-open .opblock-section-request-body').waitFor({ timeout: 10_000 });
  t.ok(await page.locator('.opblock.is-open .responses-table').innerText().then((text) => /409|429|503/.test(text)), 'error answers are shown');
  const dir = join(process.cwd(), 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, 'docs.png'), fullPage: false });
  t.same(errors, [], 'no script errors');
  t.ok(requested.length > 0);
  for (const address of requested) t.ok(address.startsWith(url) || address.startsWith('data:'), `${address} is served by Plait`);
});
