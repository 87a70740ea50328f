// Owns the outbound address policy: which resolved IP addresses Plait may connect to (SSRF guard), and the allow-list.
import { BlockList, isIP } from 'node:net';
import { parseAllowedNetworks } from '../../allowed-networks.js';

/**
 * Ranges never reached from a server that fetches user-supplied URLs, unless allow-listed: loopback, private,
 * link-local (incl. the 169.254.169.254 metadata address), CGNAT (incl. 100.100.100.200, Alibaba's metadata),
 * unique-local v6 (incl. AWS's fd00:ec2::254), multicast, and the unspecified/reserved blocks.
 */
const BLOCKED_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

const BLOCKED_V6: ReadonlyArray<readonly [string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (fd00:ec2::254 is AWS metadata)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // deprecated site-local
  ['ff00::', 8], // multicast
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
];

const blocked = new BlockList();
for (const [net, prefix] of BLOCKED_V4) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of BLOCKED_V6) blocked.addSubnet(net, prefix, 'ipv6');

export { AllowListError, parseAllowedNetworks } from '../../allowed-networks.js';

/**
 * An IPv6 address that carries an IPv4 one (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16,
 * compatible ::a.b.c.d) is judged by the IPv4 address inside it, so ::ffff:127.0.0.1 is loopback.
 */
function embeddedV4(address: string): string | undefined {
  const groups = expandV6(address);
  if (groups === undefined) return undefined;
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number): boolean => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6] ?? 0, groups[7] ?? 0);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6] ?? 0, groups[7] ?? 0);
  if (groups[0] === 0x2002) return v4(groups[1] ?? 0, groups[2] ?? 0);
  if (zeros(0, 6) && !((groups[6] ?? 0) === 0 && (groups[7] ?? 0) <= 1)) return v4(groups[6] ?? 0, groups[7] ?? 0);
  return undefined;
}

/** Eight 16-bit groups of an IPv6 address (with an optional dotted IPv4 tail), or undefined when malformed. */
function expandV6(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    const parts = last.split('.').map(Number);
    if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return undefined;
    const hi = ((parts[0] ?? 0) << 8) | (parts[1] ?? 0);
    const lo = ((parts[2] ?? 0) << 8) | (parts[3] ?? 0);
    text = `${text.slice(0, lastColon + 1)}${hi.toString(16)}:${lo.toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const head = parse(halves[0] ?? '');
  const rest = halves.length === 2 ? parse(halves[1] ?? '') : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 && missing !== 0) return undefined;
  if (missing < 0) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...rest];
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined;
  return groups;
}

/** Decides per resolved address; immutable once built. */
export class AddressPolicy {
  private readonly allowed: BlockList;

  constructor(allowedNetworks: readonly string[]) {
    this.allowed = parseAllowedNetworks(allowedNetworks);
  }

  /** Undefined when `address` may be reached, else the reason it may not. */
  refusal(address: string): string | undefined {
    const family = isIP(address);
    if (family === 0) return `"${address}" is not an IP address`;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (this.allowed.check(address, type)) return undefined;
    const inner = family === 6 ? embeddedV4(address) : undefined;
    if (inner !== undefined) {
      if (this.allowed.check(inner, 'ipv4')) return undefined;
      if (blocked.check(inner, 'ipv4')) return `${address} embeds the non-public address ${inner}`;
    }
    if (blocked.check(address, type)) return `${address} is a loopback, private, link-local or reserved address`;
    return undefined;
  }
}
