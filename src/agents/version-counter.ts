// Owns the agent-version allocation port: where a custom agent's next version number comes from.

/**
 * Hands out version numbers of custom agents. One process needs none (the version is `latestVersion + 1`, read and
 * written in one LMDB transaction). In a cluster two nodes' caches can both read the same `latestVersion`, so
 * src/cluster/agent-versions.ts allocates from a compare-and-set counter in a JetStream KV bucket: every number is
 * handed out once across the cluster, so two edits never write the same version key.
 */
export interface AgentVersionCounter {
  /** A version above `latest` (the cache's newest) that no other call anywhere gets for this agent. UNAVAILABLE when it cannot tell. */
  next(apiKey: string, agentId: string, latest: number): Promise<number>;
}
