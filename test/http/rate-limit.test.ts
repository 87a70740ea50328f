import t from 'tap';
import { AppError } from '../../src/errors.js';
import { ClientAddresses, normalizeAddress, rateLimitKey } from '../../src/http/client-address.js';
import { RateLimiter } from '../../src/http/rate-limit.js';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

function refusal(fn: () => void): AppError | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

t.test('a burst past the limit is RESOURCE_EXHAUSTED with Retry-After; the limit recovers after its window', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ limit: 5, windowMs: 60_000, maxKeys: 100, subject: 'client address', now: c.now });
  for (let i = 0; i < 5; i++) limiter.take('1.2.3.4');
  const refused = refusal(() => limiter.take('1.2.3.4'));
  t.equal(refused?.status, 'RESOURCE_EXHAUSTED');
  t.equal(refused?.httpStatus, 429);
  t.equal(Math.ceil(refused?.retryAfterSeconds ?? 0), 12, 'one token comes back after a fifth of the minute');
  t.match(refused?.message, /client address \(5 requests per minute\)/);
  t.equal(refusal(() => limiter.take('5.6.7.8')), undefined, 'another key has its own bucket');
  c.advance(11_999);
  t.ok(refusal(() => limiter.take('1.2.3.4')), 'still refused just before a token is back');
  c.advance(60_000);
  for (let i = 0; i < 5; i++) t.equal(refusal(() => limiter.take('1.2.3.4')), undefined, `request ${i + 1} after the window`);
  t.ok(refusal(() => limiter.take('1.2.3.4')), 'the burst is again the limit, not more');
});

t.test('limit 0 turns a limiter off', async (t) => {
  const limiter = new RateLimiter({ limit: 0, windowMs: 60_000, maxKeys: 100, subject: 'API key' });
  for (let i = 0; i < 1000; i++) limiter.take('k');
  t.equal(limiter.enabled, false);
  t.equal(limiter.size, 0, 'nothing is remembered');
});

t.test('100,000 distinct client addresses leave the limiter at its key bound; a busy key survives the flood', async (t) => {
  const c = clock();
  const maxKeys = 10_000;
  const limiter = new RateLimiter({ limit: 3, windowMs: 60_000, maxKeys, subject: 'client address', now: c.now });
  let largest = 0;
  for (let i = 0; i < 100_000; i++) {
    limiter.take(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    if (i % 1000 === 0) {
      // The abuser keeps hitting: as the most recently used key it is never the one forgotten.
      refusal(() => limiter.take('203.0.113.9'));
    }
    largest = Math.max(largest, limiter.size);
  }
  t.equal(largest, maxKeys, 'never more than the bound, at any point of the flood');
  t.equal(limiter.size, maxKeys, 'exactly the bound is kept');
  t.ok(refusal(() => limiter.take('203.0.113.9')), 'the busy key is still limited after 100,000 others');
});

t.test('addresses: uWS text forms are normalized; IPv6 is limited per /64', async (t) => {
  t.equal(normalizeAddress('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1', 'IPv4-mapped');
  t.equal(normalizeAddress('0000:0000:0000:0000:0000:0000:0000:0001'), '0:0:0:0:0:0:0:1');
  t.equal(normalizeAddress('::ffff:10.1.2.3'), '10.1.2.3');
  t.equal(normalizeAddress('2001:DB8::1'), '2001:db8:0:0:0:0:0:1');
  t.equal(normalizeAddress('192.0.2.7'), '192.0.2.7');
  t.equal(rateLimitKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(rateLimitKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64', 'same /64, same key');
  t.not(rateLimitKey('2001:db8:1:3::1'), rateLimitKey('2001:db8:1:2::1'));
  t.equal(rateLimitKey('192.0.2.7'), '192.0.2.7');
});

t.test('X-Forwarded-For is believed only from a trusted proxy, read from the right', async (t) => {
  const none = new ClientAddresses([]);
  t.equal(none.resolve('198.51.100.1', '1.1.1.1'), '198.51.100.1', 'no trusted proxies: the header is ignored');
  const proxies = new ClientAddresses(['10.0.0.0/8', '::1']);
  t.equal(proxies.resolve('203.0.113.5', '1.1.1.1'), '203.0.113.5', 'an untrusted peer cannot choose its address');
  t.equal(proxies.resolve('10.0.0.2', '192.0.2.44'), '192.0.2.44', 'one trusted proxy');
  t.equal(proxies.resolve('10.0.0.2', '6.6.6.6, 192.0.2.44, 10.1.1.1'), '192.0.2.44', 'a spoofed left entry is not reached');
  t.equal(proxies.resolve('0000:0000:0000:0000:0000:0000:0000:0001', '192.0.2.44'), '192.0.2.44', 'IPv6 loopback proxy in uWS form');
  t.equal(proxies.resolve('0000:0000:0000:0000:0000:ffff:0a00:0002', '192.0.2.45'), '192.0.2.45', 'IPv4-mapped proxy address');
  t.equal(proxies.resolve('10.0.0.2', 'garbage, 192.0.2.44'), '192.0.2.44', 'a malformed entry ends the walk');
  t.equal(proxies.resolve('10.0.0.2', 'garbage'), '10.0.0.2', 'nothing usable: the proxy itself');
  t.equal(proxies.resolve('10.0.0.2', ''), '10.0.0.2', 'no header: the peer');
  t.equal(proxies.resolve('10.0.0.2', '10.0.0.3, 10.0.0.4'), '10.0.0.3', 'only proxies: the leftmost');
});
