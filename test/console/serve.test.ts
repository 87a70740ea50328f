// Tests src/console/serve.ts without a browser: /console's files are read per request (503 while missing, never held).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { mountConsole } from '../../src/console/serve.js';
import { loadUws } from '../../src/http/uws.js';

t.test('the console answers 503 while unbuilt, then serves what is on disk at each request', async (t) => {
  const dir = t.testdir();
  const warnings: string[] = [];
  const uws = loadUws();
  const app = uws.App();
  mountConsole(app, dir, { warn: (message: string) => warnings.push(message) });
  const socket = await new Promise<Exclude<Parameters<typeof uws.us_listen_socket_close>[0], false>>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (listen) => (listen === false ? reject(new Error('listen failed')) : resolve(listen)));
  });
  const port = uws.us_socket_local_port(socket);
  t.teardown(() => uws.us_listen_socket_close(socket));
  t.equal(warnings.length, 4, 'each missing file is named once at mount');

  const missing = await fetch(`http://127.0.0.1:${port}/console/`);
  t.equal(missing.status, 503);
  t.match(await missing.text(), /npm run build/);

  writeFileSync(join(dir, 'index.html'), '<p>one</p>');
  writeFileSync(join(dir, 'app.js'), 'console.log(1)');
  const page = await fetch(`http://127.0.0.1:${port}/console`);
  t.equal(page.status, 200, 'a file built after the start is served');
  t.equal(await page.text(), '<p>one</p>');
  t.equal(page.headers.get('x-frame-options'), 'DENY');
  const script = await fetch(`http://127.0.0.1:${port}/console/app.js`);
  t.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');

  writeFileSync(join(dir, 'index.html'), '<p>two</p>');
  t.equal(await (await fetch(`http://127.0.0.1:${port}/console/`)).text(), '<p>two</p>', 'nothing is held: a rebuild is served at once');
});
