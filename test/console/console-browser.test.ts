// Tests the browser console end to end in real Chromium: two pages edit one document and converge, see presence and a live comment.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import t from 'tap';
import { buildConsole } from '../../src/console/build.js';
import type { Credentials } from '../helpers/api.js';
import { chromiumPath, NO_CHROMIUM } from '../helpers/chromium.js';
import { startTestServer } from '../helpers/server.js';

const executablePath = chromiumPath();
const ORG = 'org-console';
const DOC = 'doc-console';
// The flags a root, offline machine needs (no sandbox, no background network): see the env notes in docs/testing.
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

async function signInAndOpen(browser: Browser, url: string, credentials: Credentials, name: string, role = 'editor'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${url}/console`);
  await page.fill('#apiKey', credentials.apiKey);
  await page.fill('#authToken', credentials.authToken);
  await page.click('#signin button[type=submit]');
  await page.locator(`#organizations button[data-org="${ORG}"]`).click();
  await page.locator(`#documents button[data-doc="${DOC}"]`).waitFor();
  await page.fill('#displayName', name);
  await page.selectOption('#role', role);
  await page.locator(`#documents button[data-doc="${DOC}"]`).click();
  await page.locator('#status', { hasText: 'connected' }).waitFor();
  if (errors.length > 0) throw new Error(`script errors: ${errors.join('; ')}`);
  return page;
}

/** The editor's text as a person reads it: the lines, without the other users' cursor labels (run in the page). */
const READ_EDITOR = `(() => {
  const content = document.querySelector('#editor .cm-content').cloneNode(true);
  for (const label of content.querySelectorAll('.cm-ySelectionCaret, .cm-ySelectionInfo, .cm-widgetBuffer')) label.remove();
  return [...content.querySelectorAll('.cm-line')].map((line) => line.textContent).join('\\n');
})()`;
const editorText = (page: Page): Promise<string> => page.evaluate<string>(READ_EDITOR);

t.test('two console pages edit one document and converge, with presence and a live comment', { skip: executablePath === undefined ? NO_CHROMIUM : false }, async (t) => {
  await buildConsole();
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  await api.call(credentials, '/v2/organizations/add', { organizations: [{ organizationId: ORG, organizationName: 'Console org' }] });
  await api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: DOC, documentName: 'Shared notes' }] });
  await api.call(credentials, '/v2/crdt/add', { organizationId: ORG, documentId: DOC, editorId: 'main', type: 'text', data: 'Seeded over REST. ' });

  const browser = await chromium.launch({ executablePath: executablePath ?? '', args: ARGS });
  t.teardown(() => browser.close());
  const ann = await signInAndOpen(browser, url, credentials, 'Ann');
  const ben = await signInAndOpen(browser, url, credentials, 'Ben');

  await ann.locator('#editor .cm-content', { hasText: 'Seeded over REST.' }).waitFor();
  t.pass('the REST-seeded text shows in the editor (root `content`)');
  await ann.click('#editor .cm-content');
  await ann.keyboard.press('End');
  await ann.keyboard.type('Ann was here.');
  await ben.locator('#editor .cm-content', { hasText: 'Ann was here.' }).waitFor();
  await ben.click('#editor .cm-content');
  await ben.keyboard.press('End');
  await ben.keyboard.type(' Ben too.');
  await ann.locator('#editor .cm-content', { hasText: 'Ben too.' }).waitFor();
  t.equal(await editorText(ann), await editorText(ben), 'both editors hold the same text');
  t.equal(await editorText(ann), 'Seeded over REST. Ann was here. Ben too.');

  await ann.locator('#presence li[data-user="console-ben"][data-status="online"]').waitFor();
  await ben.locator('#presence li[data-user="console-ann"][data-status="online"]').waitFor();
  t.pass('each page sees the other present');

  await ben.fill('#commentText', 'Looks good to me');
  await ben.click('#comment button[type=submit]');
  await ann.locator('#threads li', { hasText: 'Ben: Looks good to me' }).waitFor();
  t.pass('a comment added on one page reaches the other live');
  const threads = await api.call<Array<{ comments: Array<{ commentText: string; from: { userId: string } }> }>>(credentials, '/v2/commentannotations/get', { organizationId: ORG, documentId: DOC });
  t.same(threads.body.result?.data.map((thread) => [thread.comments[0]?.commentText, thread.comments[0]?.from.userId]), [['Looks good to me', 'console-ben']], 'and the REST API has it');
  const stored = await api.call<Array<{ data: string }>>(credentials, '/v2/crdt/get', { organizationId: ORG, documentId: DOC, editorId: 'main' });
  t.equal(stored.body.result?.data[0]?.data, 'Seeded over REST. Ann was here. Ben too.', 'the server holds the edits');

  const dir = join(process.cwd(), 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  await ann.screenshot({ path: join(dir, 'console-ann.png') });
  await ben.screenshot({ path: join(dir, 'console-ben.png') });
});

t.test('a viewer opens the document read-only in the console', { skip: executablePath === undefined ? NO_CHROMIUM : false }, async (t) => {
  await buildConsole();
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  await api.call(credentials, '/v2/organizations/add', { organizations: [{ organizationId: ORG, organizationName: 'Console org' }] });
  await api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: DOC }] });
  await api.call(credentials, '/v2/crdt/add', { organizationId: ORG, documentId: DOC, editorId: 'main', type: 'text', data: 'Read me.' });
  const browser = await chromium.launch({ executablePath: executablePath ?? '', args: ARGS });
  t.teardown(() => browser.close());
  const viewer = await signInAndOpen(browser, url, credentials, 'Vera', 'viewer');
  await viewer.locator('#editor .cm-content', { hasText: 'Read me.' }).waitFor();
  t.equal(await viewer.locator('#editor .cm-content').getAttribute('contenteditable'), 'false', 'the editor is read-only');
  t.match(await viewer.locator('#docTitle').innerText(), /read-only/);
});

t.test('a wrong auth token is refused on the sign-in page', { skip: executablePath === undefined ? NO_CHROMIUM : false }, async (t) => {
  await buildConsole();
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const browser = await chromium.launch({ executablePath: executablePath ?? '', args: ARGS });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${url}/console`);
  await page.fill('#apiKey', credentials.apiKey);
  await page.fill('#authToken', 'wrong');
  await page.click('#signin button[type=submit]');
  await page.locator('#error', { hasText: 'PERMISSION_DENIED' }).waitFor();
  t.equal(await page.locator('#directory').isHidden(), true, 'no directory without valid credentials');
});
