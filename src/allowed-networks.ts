// Owns parsing OUTBOUND_ALLOWED_NETWORKS (CIDRs or bare addresses), shared by the config check and the outbound policy.
import { BlockList, isIP } from 'node:net';

export class AllowListError extends Error {
  override readonly name = 'AllowListError';
}

/** Parses `OUTBOUND_ALLOWED_NETWORKS` entries: CIDRs (`127.0.0.0/8`, `::1/128`) or bare addresses. */
export function parseAllowedNetworks(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    if (entry === '') continue;
    const slash = entry.indexOf('/');
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const family = isIP(address);
    if (family === 0) throw new AllowListError(`"${entry}" is not an IP address or CIDR network`);
    const max = family === 4 ? 32 : 128;
    const prefix = slash === -1 ? max : Number(entry.slice(slash + 1));
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) {
      throw new AllowListError(`"${entry}" has a prefix length outside 0-${max}`);
    }
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

