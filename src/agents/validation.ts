// Owns the cross-field rules of an agent's behaviour (spec 4.20) that a JSON schema cannot name clearly.
import { invalidArgument } from '../errors.js';
import { strategyOf, type Behaviour } from './model.js';

/** Strategies whose execution uses a prompt, so `instructions` is required (spec 4.20: only pure `service` may omit it). */
const PROMPTED = new Set(['ai', 'service+ai', 'browser-agent', 'mcp-tools']);

/** Checks a whole behaviour (after a version update merges its fields); throws INVALID_ARGUMENT naming the field. */
export function checkBehaviour(behaviour: Behaviour): void {
  const strategy = strategyOf(behaviour);
  if (PROMPTED.has(strategy) && (behaviour.instructions === undefined || behaviour.instructions.trim() === '')) {
    throw invalidArgument(`data.instructions is required when execution.executionStrategy is "${strategy}" (only "service" agents may omit it)`);
  }
  if ((strategy === 'service' || strategy === 'service+ai') && behaviour.execution.serviceId === undefined) {
    throw invalidArgument(`data.execution.serviceId is required when execution.executionStrategy is "${strategy}"`);
  }
  if (strategy === 'mcp-tools' && (behaviour.execution.mcpServers ?? []).length === 0) {
    throw invalidArgument('data.execution.mcpServers needs at least 1 entry when execution.executionStrategy is "mcp-tools"');
  }
  const { strategies, strategyOptions } = behaviour.contextGathering;
  if (strategies.includes('rest-api') && strategyOptions?.['rest-api'] === undefined) {
    throw invalidArgument("data.contextGathering.strategyOptions['rest-api'] is required when contextGathering.strategies includes \"rest-api\"");
  }
  if (strategies.includes('none') && strategies.length > 1) {
    throw invalidArgument('data.contextGathering.strategies cannot combine "none" with other strategies');
  }
}

/** Behavioural keys of a request body: everything but identity fields and the agent id. */
export function behaviourOf(data: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { agentId: _id, name: _name, description: _description, enabled: _enabled, ...rest } = data;
  return rest;
}
