// Tests the bound on the API keys' domain lists kept in memory (DOMAIN_LISTS_KEPT), and that the origin check stays right past it.
import t from 'tap';
import { Store } from '../../src/store/env.js';
import { DOMAIN_LISTS_KEPT, Domains } from '../../src/tenant/domains.js';

t.test('the lists of more API keys than DOMAIN_LISTS_KEPT are not all kept, and every check still reads the right list', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const domains = new Domains(store);
  await domains.add('listed-key', ['app.example.com']);
  t.equal(domains.policy('listed-key', 'https://app.example.com'), 'listed');

  // An origin check per API key, as many keys' sync upgrades and cross-origin requests make.
  const keys = DOMAIN_LISTS_KEPT + 500;
  let most = 0;
  const wrong: string[] = [];
  for (let i = 0; i < keys; i++) {
    if (domains.policy(`key-${i}`, 'https://elsewhere.example') !== 'any') wrong.push(`key-${i}`);
    most = Math.max(most, domains.keptLists);
  }
  t.same(wrong, [], 'every key without domains admits any origin');
  t.ok(most <= DOMAIN_LISTS_KEPT, `at most ${DOMAIN_LISTS_KEPT} lists kept at once (most: ${most})`);
  t.ok(domains.keptLists < keys, 'not one per API key ever checked');

  // Dropped from memory, read again: the check is the same.
  t.equal(domains.policy('listed-key', 'https://app.example.com'), 'listed', 'a list dropped from memory is read again');
  t.equal(domains.policy('listed-key', 'https://other.example.com'), 'refused');
  t.same(domains.list('key-0'), [], 'a key without domains lists none');
});
