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
