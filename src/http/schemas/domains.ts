// Owns the JSON schemas of the domain operations (upstream 1.1: allowed web origins per API key).
import { arrayOf, object } from './common.js';

const domainList = arrayOf({ type: 'string', minLength: 1, maxLength: 300 }, { min: 1, max: 100 });

export const changeDomainsSchema = object({ domains: domainList }, ['domains']);
