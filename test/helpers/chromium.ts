// Test helper: the machine's Chromium for browser tests (Debian's `chromium` package), or why there is none.
import { existsSync } from 'node:fs';

/** CHROMIUM_PATH, else the Debian package's binary; undefined when neither exists (browser tests then skip, saying so). */
export function chromiumPath(): string | undefined {
  const candidates = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  return candidates.find((path): path is string => path !== undefined && path !== '' && existsSync(path));
}

export const NO_CHROMIUM = 'Chromium not found (set CHROMIUM_PATH or `apt-get install chromium`); skipping the browser test';
