// Owns the REST commit floor: the least a correct comment write does on Plait's stack (uWS, JSON, one LMDB put, a group commit, the reply after it).
import type * as Uws from 'uWebSockets.js';
import { open, type DatabaseOptions, type Key } from 'lmdb';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { loadUws } from '../../src/http/uws.js';
import { serveHost } from '../lib/host.js';

/**
 * What REST Add Comment Annotations cannot beat on this stack (issue 18): no auth, no schema beyond the fields it
 * stores, no thread model, no index rows, no events. A POST's JSON body is parsed, a record with a time-ordered id is
 * put into LMDB (msgpack, plain maps, as Plait's rows are written) and the record is answered once the transaction
 * holding it has committed (lmdb-js resolves after the fsync, as for Plait). The requests of a turn share one
 * transaction and at most one is in flight, as in Plait's group commit (src/store/group-commit.ts).
 */
interface Pending {
  readonly res: Uws.HttpResponse;
  readonly key: Key;
  readonly record: Readonly<Record<string, unknown>>;
  aborted: boolean;
}

serveHost(async () => {
  const dataDir = process.env['DATA_DIR'];
  if (dataDir === undefined) throw new Error('rest-floor needs DATA_DIR');
  const root = open({ path: join(dataDir, 'db'), maxDbs: 4 });
  const options: DatabaseOptions & { name: string; useRecords: boolean; mapsAsObjects: boolean } = { name: 'comments', encoding: 'msgpack', useRecords: false, mapsAsObjects: true };
  const comments = root.openDB<Record<string, unknown>, Key>(options);
  let queued: Pending[] = [];
  let inFlight = false;
  let scheduled = false;
  let sequence = 0;

  const reply = (res: Uws.HttpResponse, status: string, body: unknown): void => {
    res.cork(() => {
      res.writeStatus(status).writeHeader('content-type', 'application/json; charset=utf-8').end(JSON.stringify(body));
    });
  };

  const issue = (): void => {
    scheduled = false;
    if (queued.length === 0) return;
    inFlight = true;
    let batch: Pending[] = [];
    root
      .transaction(() => {
        // Taken when lmdb-js runs the callback, as Plait's batch is: what arrived meanwhile joins it.
        batch = queued;
        queued = [];
        for (const pending of batch) comments.putSync(pending.key, pending.record);
      })
      .then(
        () => {
          for (const pending of batch) if (!pending.aborted) reply(pending.res, '200 OK', { result: { status: 'success', data: pending.record } });
        },
        (error: unknown) => {
          for (const pending of batch) if (!pending.aborted) reply(pending.res, '500 Internal Server Error', { error: { message: String(error) } });
        },
      )
      .finally(() => {
        inFlight = false;
        if (queued.length > 0) issue();
      });
  };

  const accept = (res: Uws.HttpResponse, body: string, pending: { aborted: boolean }): void => {
    let data: unknown;
    try {
      data = (JSON.parse(body) as { data?: unknown }).data;
    } catch (error) {
      reply(res, '400 Bad Request', { error: { message: `body is not JSON: ${(error as Error).message}` } });
      return;
    }
    const fields = data as { organizationId?: unknown; documentId?: unknown; commentAnnotations?: unknown } | undefined;
    if (typeof fields?.organizationId !== 'string' || typeof fields.documentId !== 'string' || !Array.isArray(fields.commentAnnotations)) {
      reply(res, '400 Bad Request', { error: { message: 'data.organizationId, data.documentId and data.commentAnnotations are required' } });
      return;
    }
    // Time first, then a counter and random bytes: rows append, as Plait's generated ids do (src/ids.ts).
    const id = `${Date.now().toString(36).padStart(9, '0')}${(sequence++).toString(36)}${randomBytes(4).toString('hex')}`;
    const record = { annotationId: id, organizationId: fields.organizationId, documentId: fields.documentId, commentAnnotations: fields.commentAnnotations, createdAt: Date.now() };
    queued.push(Object.assign(pending, { res, key: [fields.organizationId, fields.documentId, id], record }));
    if (!inFlight && !scheduled) {
      scheduled = true;
      setImmediate(issue);
    }
  };

  const uws = loadUws();
  const app = uws.App();
  app.post('/*', (res) => {
    const pending = { aborted: false };
    res.onAborted(() => {
      pending.aborted = true;
    });
    const chunks: Buffer[] = [];
    res.onData((chunk, last) => {
      // uWS reuses the chunk's memory after this callback: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (last && !pending.aborted) accept(res, Buffer.concat(chunks).toString('utf8'), pending);
    });
  });
  const socket = await new Promise<Uws.us_listen_socket>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (listen) => (listen === false ? reject(new Error('rest-floor could not listen')) : resolve(listen)));
  });
  return {
    port: uws.us_socket_local_port(socket),
    settle: async () => {
      await root.flushed;
    },
    stop: async () => {
      uws.us_listen_socket_close(socket);
      await root.close();
    },
  };
});
