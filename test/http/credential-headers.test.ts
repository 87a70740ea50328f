// Tests credential header values outside printable ASCII, sent as raw bytes: PERMISSION_DENIED naming the header and saying the value is not valid.
import t from 'tap';
import type { Credentials } from '../helpers/api.js';
import { openSocket, response } from '../helpers/raw-http.js';
import { startTestServer } from '../helpers/server.js';

interface Header {
  readonly name: string;
  readonly what: string;
  readonly path: string;
  /** The credential's value, and the other header of the pair with its valid value. */
  readonly value: (c: Credentials) => string;
  readonly other: (c: Credentials) => readonly [string, string];
}

const HEADERS: readonly Header[] = [
  { name: 'x-svc-workspace-id', what: 'workspace id', path: '/v2/workspace/get', value: (c) => c.workspaceId, other: (c) => ['x-svc-workspace-auth-token', c.workspaceToken] },
  { name: 'x-svc-workspace-auth-token', what: 'workspace auth token', path: '/v2/workspace/get', value: (c) => c.workspaceToken, other: (c) => ['x-svc-workspace-id', c.workspaceId] },
  { name: 'x-svc-api-key', what: 'API key', path: '/v2/workspace/activityconfig/get', value: (c) => c.apiKey, other: (c) => ['x-svc-auth-token', c.authToken] },
  { name: 'x-svc-auth-token', what: 'auth token', path: '/v2/workspace/activityconfig/get', value: (c) => c.authToken, other: (c) => ['x-svc-api-key', c.apiKey] },
];

/** One request on a fresh socket, the headers' values as raw bytes (`undefined`: not sent); answers status and envelope. */
async function send(port: number, path: string, headers: Record<string, Buffer | undefined>): Promise<{ status: number; error: unknown }> {
  const socket = await openSocket(port);
  try {
    const body = JSON.stringify({ data: {} });
    const parts: Buffer[] = [Buffer.from(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n`)];
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) parts.push(Buffer.from(`${name}: `), value, Buffer.from('\r\n'));
    parts.push(Buffer.from(`\r\n${body}`));
    const answered = response(socket);
    socket.write(Buffer.concat(parts));
    const { status, body: text } = await answered;
    return { status, error: (JSON.parse(text) as { error?: unknown }).error };
  } finally {
    socket.destroy();
  }
}

t.test('a credential header holding non-ASCII bytes is named as not valid, not as missing', async (t) => {
  const { server, api } = await startTestServer(t);
  const creds = await api.createWorkspace();
  for (const header of HEADERS) {
    const valid = header.value(creds);
    const [otherName, otherValue] = header.other(creds);
    const call = (value: Buffer | undefined) => send(server.port, header.path, { [header.name]: value, [otherName]: Buffer.from(otherValue) });
    t.equal((await call(Buffer.from(valid))).status, 200, `${header.name}: the valid value opens ${header.path}`);

    const notValid = { status: 'PERMISSION_DENIED', message: `the ${header.name} header is not a valid ${header.what}: it holds characters other than printable ASCII` };
    // uWS hands a value's bytes as latin1: UTF-8 'ö' arrives as two characters, a latin1 byte as one.
    for (const [label, value] of [
      ['UTF-8 inside', Buffer.concat([Buffer.from(valid.slice(0, 3)), Buffer.from('ö', 'utf8'), Buffer.from(valid.slice(3))])],
      ['a latin1 byte inside', Buffer.concat([Buffer.from(valid.slice(0, 3)), Buffer.from([0xf6]), Buffer.from(valid.slice(3))])],
      ['a tab inside', Buffer.from(`${valid.slice(0, 3)}\t${valid.slice(3)}`)],
    ] as const) {
      t.same(await call(value), { status: 403, error: notValid }, `${header.name}: ${label}`);
    }

    const readsEmpty = { status: 'PERMISSION_DENIED', message: `the ${header.name} header is not a valid ${header.what}: it reads as empty (so does a value of only non-ASCII characters)` };
    // uWS trims bytes of 0x80 and above at a value's ends as whitespace: these read as '' and were "header is required".
    for (const [label, value] of [
      ['only UTF-8 non-ASCII', Buffer.from('öä', 'utf8')],
      ['only latin1 bytes', Buffer.from([0xe9, 0xf6])],
      ['sent empty', Buffer.alloc(0)],
    ] as const) {
      t.same(await call(value), { status: 403, error: readsEmpty }, `${header.name}: ${label}`);
    }
    t.same(await call(undefined), { status: 403, error: { status: 'PERMISSION_DENIED', message: `the ${header.name} header is required` } }, `${header.name}: not sent`);

    // The same trim takes such bytes off the ends of a value that has ASCII within: it reads as that ASCII (docs/limits.md).
    t.equal((await call(Buffer.concat([Buffer.from('é', 'utf8'), Buffer.from(valid), Buffer.from('ö', 'utf8')]))).status, 200, `${header.name}: non-ASCII at the ends is trimmed by uWS`);
  }
});
