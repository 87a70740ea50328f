// Owns who the client is: the peer address of the socket, or X-Forwarded-For when the peer is a trusted proxy; the rate-limit key of an address.
import { BlockList, isIP } from 'node:net';

export class ClientAddresses {
  private readonly trusted = new BlockList();
  private readonly anyTrusted: boolean;

  /** `trustedProxies`: addresses and CIDR ranges (`10.0.0.0/8`, `::1`), already checked by the config parser. */
  constructor(trustedProxies: readonly string[]) {
    for (const entry of trustedProxies) {
      const [address = '', prefix] = entry.split('/');
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (prefix === undefined) this.trusted.addAddress(address, family);
      else this.trusted.addSubnet(address, Number(prefix), family);
    }
    this.anyTrusted = trustedProxies.length > 0;
  }

  /**
   * The client's address. `peer` is what the socket says (uWS text form); `forwardedFor` the X-Forwarded-For header.
   * The header is read only when the peer is a trusted proxy, from the right: each trusted hop is skipped, the
   * first untrusted (or malformed) entry ends the walk, so a client cannot choose its address by sending the header.
   */
  resolve(peer: string, forwardedFor: string): string {
    let client = normalizeAddress(peer);
    if (!this.anyTrusted || forwardedFor === '' || !this.isTrusted(client)) return client;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalizeAddress((hops[i] ?? '').trim());
      if (isIP(hop) === 0) return client;
      client = hop;
      if (!this.isTrusted(hop)) return hop;
    }
    return client;
  }

  isTrusted(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    return this.trusted.check(address, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/**
 * Canonical text of an address: IPv4 dotted, IPv4-mapped IPv6 as IPv4, other IPv6 as eight lower-case groups
 * without leading zeros (uWS prints all 32 digits). Anything else is returned as given.
 */
export function normalizeAddress(text: string): string {
  const family = isIP(text);
  if (family !== 6) return text;
  const groups = expandIpv6(text);
  if (groups === undefined) return text;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const high = groups[6] ?? 0;
    const low = groups[7] ?? 0;
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return groups.map((g) => g.toString(16)).join(':');
}

/**
 * The key an address is rate limited under: an IPv4 address itself, an IPv6 address by its /64 prefix (one
 * subscriber usually holds a whole /64, so per-address limits on IPv6 would be free to dodge).
 */
export function rateLimitKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIpv6(address);
  return groups === undefined ? address : `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

function expandIpv6(text: string): number[] | undefined {
  let body = text;
  const lastColon = body.lastIndexOf(':');
  const last = body.slice(lastColon + 1);
  if (isIP(last) === 4) {
    // An embedded IPv4 tail (::ffff:1.2.3.4) becomes its two hex groups.
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    body = `${body.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = body.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (rest === undefined && missing !== 0)) return undefined;
  const groups = [...left, ...new Array<number>(missing).fill(0), ...right];
  return groups.some((g) => Number.isNaN(g)) ? undefined : groups;
}
