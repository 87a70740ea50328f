// Test helper: fake model servers on loopback, one OpenAI-compatible (chat completions) and one Anthropic-style (messages).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { pageServer } from './pages.js';

export interface FakeLlm {
  readonly baseUrl: string;
  /** Bodies of the requests received, parsed. */
  readonly requests: Array<Record<string, unknown>>;
  /** Headers of the requests received. */
  readonly headers: Array<Record<string, string | string[] | undefined>>;
  /** What the model answers next (one entry per call; the last one repeats). */
  answers: string[];
}

function collect(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function fake(t: Test, path: string, reply: (text: string, body: Record<string, unknown>) => unknown, prefix: string): Promise<FakeLlm> {
  const state: FakeLlm = { baseUrl: '', requests: [], headers: [], answers: ['{"findings": []}'] };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    void collect(req).then((raw) => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      state.requests.push(body);
      state.headers.push(req.headers);
      const text = state.answers.length > 1 ? (state.answers.shift() ?? '') : (state.answers[0] ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply(text, body)));
    });
  };
  const server = await pageServer(t, { [path]: handler });
  return Object.assign(state, { baseUrl: `${server.url}${prefix}` });
}

/** POST {base}/chat/completions, base = http://127.0.0.1:port/v1 */
export function fakeOpenAi(t: Test): Promise<FakeLlm> {
  return fake(
    t,
    '/v1/chat/completions',
    (text, body) => ({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: body['model'],
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
    }),
    '/v1',
  );
}

/** POST {base}/v1/messages, base = http://127.0.0.1:port */
export function fakeMessages(t: Test): Promise<FakeLlm> {
  return fake(
    t,
    '/v1/messages',
    (text, body) => ({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: body['model'],
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 200, output_tokens: 40 },
    }),
    '',
  );
}
