// Owns the REST ceiling: the uWebSockets.js hello-world (one handler, fixed reply), loaded (and checked native) like Plait loads it.
import type * as Uws from 'uWebSockets.js';
import { loadUws } from '../../src/http/uws.js';
import { serveHost } from '../lib/host.js';

serveHost(async () => {
  const uws = loadUws();
  const app = uws.App();
  app.any('/*', (res) => {
    res.end('Hello World!');
  });
  const socket = await new Promise<Uws.us_listen_socket>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (listen) => (listen === false ? reject(new Error('uws-hello could not listen')) : resolve(listen)));
  });
  return {
    port: uws.us_socket_local_port(socket),
    stop: async () => {
      uws.us_listen_socket_close(socket);
    },
  };
});
