// Test helper for delivery: a real server whose delivery runs only when pumped, on a manual clock, plus a REST caller.
import type { Test } from 'tap';
import type { Config } from '../../src/config.js';
import { ManualClock } from '../../src/delivery/clock.js';
import type { EmailMessage } from '../../src/email-message.js';
import { createLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { testConfig } from '../helpers/server.js';
import { envFor, type Env } from '../http/comments-env.js';

export interface DeliveryEnv extends Env {
  readonly running: RunningServer;
  readonly clock: ManualClock;
  /** Dispatches every outbox event and runs every delivery due at the clock's time. */
  pump(): Promise<void>;
  /** Moves the clock and runs what became due. */
  advance(ms: number): Promise<void>;
}

export async function deliveryEnv(t: Test, overrides: Partial<Config> = {}, dataDir?: string): Promise<DeliveryEnv> {
  const clock = new ManualClock(Date.now());
  const config = testConfig(dataDir ?? t.testdir(), { outboundAllowedNetworks: ['127.0.0.0/8'], ...overrides });
  // Account emails (owner verification on workspace create) are another feature's; kept out of the SMTP sink here.
  const accountMail: EmailMessage[] = [];
  const running = await startServer(config, createLogger(config.logLevel), { clock, autoDeliver: false, emailTransport: { send: async (msg) => void accountMail.push(msg) } });
  t.teardown(() => running.stop());
  const url = `http://127.0.0.1:${running.port}`;
  const api = new ApiClient(url);
  const creds: Credentials = await api.createWorkspace();
  const base = envFor({ server: running, config, url, api, restart: () => Promise.reject(new Error('not supported')) }, creds);
  const { delivery } = running.services;
  const pump = async (): Promise<void> => {
    await delivery.dispatcher.drain();
    await delivery.runner.drain();
  };
  return {
    ...base,
    running,
    clock,
    pump,
    advance: async (ms) => {
      clock.advance(ms);
      await pump();
    },
  };
}

export const alice = { userId: 'alice', name: 'Alice', email: 'alice@example.com' };
export const bob = { userId: 'bob', name: 'Bob', email: 'bob@example.com' };
export const carol = { userId: 'carol', name: 'Carol', email: 'carol@example.com' };
export const scope = { organizationId: 'org1', documentId: 'doc1' };

/** A thread by Alice mentioning Bob, assigned to Carol. */
export function threadBody(annotationId = 'thread-1', text = 'Please check this, @bob'): unknown {
  return {
    ...scope,
    commentAnnotations: [
      {
        annotationId,
        commentData: [{ commentText: text, from: alice, taggedUserContacts: [{ text: '@bob', userId: 'bob', contact: { email: bob.email, name: bob.name, userId: 'bob' } }] }],
        assignedTo: carol,
      },
    ],
  };
}
