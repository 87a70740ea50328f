// Tests that the default log level tells an operator about connections and rejected requests, one line each.
import { EventEmitter } from 'node:events';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { ApiClient } from '../helpers/api.js';
import { testConfig } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, type Room } from '../helpers/sync.js';

interface Line {
  msg: string;
  level: string;
  [field: string]: unknown;
}

t.test('at level info: sync opens, closes and refusals, and rejected REST requests, one line each', async (t) => {
  const lines: Line[] = [];
  const written = new EventEmitter();
  const log = createLogger('info', {}, (text) => {
    const line = JSON.parse(text) as Line;
    lines.push(line);
    written.emit('line', line);
  });
  const next = (msg: string): Promise<Line> =>
    new Promise((resolve) => {
      const found = lines.find((l) => l.msg === msg);
      if (found !== undefined) return resolve(found);
      const on = (line: Line): void => {
        if (line.msg !== msg) return;
        written.off('line', on);
        resolve(line);
      };
      written.on('line', on);
    });
  const server = await startServer(testConfig(t.testdir(), { logLevel: 'info' }), log);
  t.teardown(() => server.stop());
  const url = `http://127.0.0.1:${server.port}`;
  const api = new ApiClient(url);
  const credentials = await api.createWorkspace();
  const count = (msg: string): number => lines.filter((l) => l.msg === msg).length;

  const bad = await api.call(credentials, '/v2/presence/update', { organizationId: 'o' });
  t.equal(bad.status, 400);
  t.equal(count('request rejected'), 1, 'one line for the rejected request');
  t.match(lines.find((l) => l.msg === 'request rejected'), { level: 'info', status: 'INVALID_ARGUMENT', httpStatus: 400, path: '/v2/presence/update' });
  t.equal((await fetch(`${url}/v2/nothing/here`, { method: 'POST' })).status, 404);
  t.equal(count('request rejected'), 2, 'unknown paths too');

  const room: Room = { organizationId: 'org-l', documentId: 'doc-l', editorId: 'main' };
  const client = connect(t, url, room, await userToken(api, credentials, [editorOf(room)], 'logger'));
  await synced(client);
  t.match(await next('sync connection opened'), { level: 'info', userId: 'logger', documentId: 'doc-l' });
  client.provider.destroy();
  t.match(await next('sync connection closed'), { level: 'info' });
  t.equal(count('sync connection opened'), 1);
  t.equal(count('sync connection closed'), 1);

  const refused = connect(t, url, room, 'not-a-jwt');
  t.match(await next('sync connection refused'), { level: 'info', status: 'UNAUTHENTICATED' });
  refused.provider.destroy();
});
