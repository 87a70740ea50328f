import t from 'tap';
import { startTestServer } from '../helpers/server.js';

t.test('healthz answers ok and a workspace can call an API-key operation', async (t) => {
  const { api, url } = await startTestServer(t);
  const health = await fetch(`${url}/healthz`);
  t.same(await health.json(), { status: 'ok' });
  const credentials = await api.createWorkspace();
  const config = await api.call(credentials, '/v2/workspace/apikeyconfig/get', {});
  t.equal(config.status, 200);
  t.equal(config.body.result?.status, 'success');
});
