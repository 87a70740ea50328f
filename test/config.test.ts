import t from 'tap';
import { ConfigError, describeOptions, loadConfig } from '../src/config.js';

t.test('defaults serve on 127.0.0.1:8080 with data in ./data', async (t) => {
  const config = loadConfig({}, []);
  t.equal(config.host, '127.0.0.1');
  t.equal(config.port, 8080);
  t.equal(config.dataDir, `${process.cwd()}/data`);
  t.equal(config.maxBodyBytes, 1024 * 1024);
  t.ok(Object.isFrozen(config));
});

t.test('flags win over env vars, env vars over defaults', async (t) => {
  const config = loadConfig({ PORT: '9000', HOST: '0.0.0.0', DEV_BOOTSTRAP: 'false' }, ['--port', '9100', '--data-dir=/tmp/x']);
  t.equal(config.port, 9100);
  t.equal(config.host, '0.0.0.0');
  t.equal(config.dataDir, '/tmp/x');
  t.equal(config.devBootstrap, false);
  t.equal(loadConfig({}, ['--no-dev-bootstrap']).devBootstrap, false);
  t.equal(loadConfig({}, ['--persistence']).persistence, true);
});

t.test('invalid values are refused with a message naming the variable or flag', async (t) => {
  t.throws(() => loadConfig({ PORT: 'eighty' }, []), new ConfigError('PORT must be an integer from 0 to 65535, got "eighty"'));
  t.throws(() => loadConfig({}, ['--port', '70000']), { message: /^--port must be an integer/ });
  t.throws(() => loadConfig({ LOG_LEVEL: 'loud' }, []), { message: /LOG_LEVEL must be one of/ });
  t.throws(() => loadConfig({ DEV_BOOTSTRAP: 'maybe' }, []), { message: /DEV_BOOTSTRAP must be a boolean/ });
  t.throws(() => loadConfig({}, ['--colour', 'red']), { message: /unknown flag --colour/ });
  t.throws(() => loadConfig({}, ['stray']), { message: /unexpected argument "stray"/ });
});

t.test('every option has an env var and a matching flag', async (t) => {
  for (const option of describeOptions()) {
    t.equal(option.flag, `--${option.env.toLowerCase().replaceAll('_', '-')}`);
  }
});

t.test('public-surface options: durations, proxy ranges, console origins, public URL', async (t) => {
  const config = loadConfig({ EMAIL_VERIFICATION_GRACE: '12h', LOGIN_LINK_TTL: '90s', TRUSTED_PROXIES: '10.0.0.0/8, ::1', CONSOLE_ORIGIN: 'https://console.example.com/' }, []);
  t.equal(config.emailVerificationGraceMs, 12 * 3_600_000);
  t.equal(config.loginLinkTtlMs, 90_000);
  t.same(config.trustedProxies, ['10.0.0.0/8', '::1']);
  t.same(config.consoleOrigins, ['https://console.example.com'], 'a trailing slash is tolerated');
  t.equal(loadConfig({ EMAIL_VERIFICATION_GRACE: 'off' }, []).emailVerificationGraceMs, 0);
  t.equal(loadConfig({}, []).emailVerificationGraceMs, 30 * 86_400_000, 'default 30 days');
  t.equal(loadConfig({ PUBLIC_URL: 'https://plait.example.com/' }, []).publicUrl, 'https://plait.example.com');
  t.throws(() => loadConfig({ EMAIL_VERIFICATION_GRACE: 'soon' }, []), { message: /EMAIL_VERIFICATION_GRACE must be a duration/ });
  t.throws(() => loadConfig({ LOGIN_LINK_TTL: 'off' }, []), { message: /LOGIN_LINK_TTL must be a duration/ });
  t.throws(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/33' }, []), { message: /TRUSTED_PROXIES: "10.0.0.0\/33" is not an IP address or CIDR range/ });
  t.throws(() => loadConfig({ TRUSTED_PROXIES: 'proxy.local' }, []), { message: /TRUSTED_PROXIES/ });
  t.throws(() => loadConfig({ CONSOLE_ORIGIN: 'https://console.example.com/app' }, []), { message: /CONSOLE_ORIGIN: .* must be an http\(s\) origin/ });
  t.throws(() => loadConfig({ CONSOLE_ORIGIN: 'console.example.com' }, []), { message: /CONSOLE_ORIGIN/ });
  t.throws(() => loadConfig({ PUBLIC_URL: 'ftp://x' }, []), { message: /PUBLIC_URL must be an http\(s\) URL/ });
});

t.test('cluster mode (NATS_URL) requires SECRET_KEY; without NATS_URL nothing changes', async (t) => {
  const single = loadConfig({}, []);
  t.equal(single.natsUrl, undefined, 'off by default');
  t.equal(single.nodeId, undefined);
  t.equal(single.clusterLeaseMs, 10_000);
  t.equal(single.clusterReplicas, 1, 'one replica by default (one NATS server)');
  t.throws(() => loadConfig({ NATS_URL: 'nats://127.0.0.1:4222' }, []), new ConfigError('NATS_URL is set (cluster mode) but SECRET_KEY is not: set the same SECRET_KEY on every node'));
  const key = 'a'.repeat(64);
  const clustered = loadConfig({ NATS_URL: 'nats://127.0.0.1:4222', SECRET_KEY: key, NODE_ID: 'n1', CLUSTER_LEASE_MS: '3000' }, []);
  t.equal(clustered.natsUrl, 'nats://127.0.0.1:4222');
  t.equal(clustered.nodeId, 'n1');
  t.equal(clustered.clusterLeaseMs, 3000);
  t.equal(loadConfig({ NATS_URL: 'nats://127.0.0.1:4222', SECRET_KEY: key, CLUSTER_REPLICAS: '3' }, []).clusterReplicas, 3);
  t.throws(() => loadConfig({ NATS_URL: 'nats://x', SECRET_KEY: key, CLUSTER_REPLICAS: '0' }, []), { message: /CLUSTER_REPLICAS must be an integer from 1 to 5/ });
  t.throws(() => loadConfig({ NATS_URL: 'http://x', SECRET_KEY: key }, []), { message: /NATS_URL must be nats:\/\/host:port/ });
  t.throws(() => loadConfig({ NATS_URL: 'nats://x', SECRET_KEY: key, CLUSTER_LEASE_MS: '60000' }, []), { message: /CLUSTER_LEASE_MS must be an integer from 1000 to 10000/ });
});

t.test('the loaded-documents budget: defaults, 0 for none, and bad values named', async (t) => {
  const defaults = loadConfig({}, []);
  t.same(
    [defaults.maxLoadedDocuments, defaults.maxLoadedDocumentsPerKey, defaults.maxLoadedDocumentBytes, defaults.maxLoadedDocumentBytesPerKey],
    [50_000, 10_000, 1024 * 1024 * 1024, 256 * 1024 * 1024],
  );
  const set = loadConfig({ MAX_LOADED_DOCUMENTS: '0', MAX_LOADED_DOCUMENT_BYTES_PER_KEY: '1048576' }, ['--max-loaded-documents-per-key', '25']);
  t.equal(set.maxLoadedDocuments, 0, '0 turns the limit off');
  t.equal(set.maxLoadedDocumentsPerKey, 25);
  t.equal(set.maxLoadedDocumentBytesPerKey, 1024 * 1024);
  t.throws(() => loadConfig({ MAX_LOADED_DOCUMENTS_PER_KEY: '-1' }, []), { message: /^MAX_LOADED_DOCUMENTS_PER_KEY must be an integer from 0 to/ });
  t.throws(() => loadConfig({}, ['--max-loaded-document-bytes', '1.5']), { message: /^--max-loaded-document-bytes must be an integer/ });
});
