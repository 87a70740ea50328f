import t from 'tap';
import { chooseUws, UWS_CANDIDATES, UwsFallbackError, type UwsCandidate } from '../../src/http/uws.js';

/** A module that looks native to the loader (the shim lacks getParts). */
const nativeLike = (tag: string) => ({ tag, App: () => tag, getParts: () => undefined, us_socket_local_port: () => 0 });
/** What the unofficial package hands back when its binary does not load: the ws shim, without getParts. */
const shimLike = { App: () => 'shim', us_socket_local_port: () => 0, default: {} };

function candidate(name: string, load: () => unknown): UwsCandidate {
  return { name, specifier: name, needs: `what ${name} needs`, load };
}

const version = () => '1.0.0';

t.test('the official build wins when it loads', async (t) => {
  const choice = chooseUws([candidate('official', () => nativeLike('official')), candidate('unofficial', () => nativeLike('unofficial'))], version);
  t.equal(choice.build, 'official');
  t.equal((choice.uws as unknown as { tag: string }).tag, 'official');
  t.same(choice.skipped, []);
});

t.test('on older glibc the official build throws and the unofficial one is chosen, with the reason kept', async (t) => {
  let unofficialLoaded = false;
  const choice = chooseUws(
    [
      candidate('official', () => {
        throw new Error('This version of uWS.js supports only Node.js versions 20, 22, 24 and 25\n\nError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38\' not found');
      }),
      candidate('unofficial', () => {
        unofficialLoaded = true;
        return nativeLike('unofficial');
      }),
    ],
    version,
  );
  t.equal(choice.build, 'unofficial');
  t.ok(unofficialLoaded);
  t.equal(choice.skipped.length, 1);
  t.match(choice.skipped[0], { build: 'official', reason: /GLIBC_2\.38/ });
});

t.test('a candidate that hands back the pure-JS shim is refused and the next one tried', async (t) => {
  const choice = chooseUws([candidate('unofficial', () => shimLike), candidate('other', () => nativeLike('other'))], version);
  t.equal(choice.build, 'other');
  t.match(choice.skipped[0], { build: 'unofficial', reason: /pure-JS \(ws\) shim/ });
});

t.test('when only the shim is left, the loader refuses to start and names every reason and what each build needs', async (t) => {
  const error = t.throws(() =>
    chooseUws(
      [
        candidate('official', () => {
          throw new Error('no binary for ABI 131');
        }),
        candidate('unofficial', () => shimLike),
      ],
      version,
    ),
  );
  t.ok(error instanceof UwsFallbackError);
  const message = (error as Error).message;
  t.match(message, /official: no binary for ABI 131/);
  t.match(message, /unofficial: its native binary did not load and it fell back to its slow pure-JS \(ws\) shim/);
  t.match(message, /Plait refuses to start on the slow shim/);
  t.match(message, /what official needs/);
  t.match(message, /what unofficial needs/);
});

t.test('non-objects and empty modules are not native', async (t) => {
  t.throws(() => chooseUws([candidate('a', () => undefined), candidate('b', () => ({}))], version), UwsFallbackError);
});

t.test('the real candidates: official first, the unofficial build as fallback, and one of them loads on this machine', async (t) => {
  t.same(
    UWS_CANDIDATES.map((c) => c.name),
    ['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial'],
  );
  const choice = chooseUws(UWS_CANDIDATES);
  t.ok(UWS_CANDIDATES.some((c) => c.name === choice.build));
  t.match(choice.version, /^\d+\.\d+\.\d+/, `version read from the package: ${choice.version}`);
  t.comment(`loaded ${choice.build} ${choice.version}; skipped: ${JSON.stringify(choice.skipped)}`);
});
