// tap `before` script: empties the directory Node writes its own V8 coverage into (see .taprc `test-env`).
// Those files are a by-product (tap's report reads .tap/coverage); without this they would pile up run after run.
import { rmSync } from 'node:fs';

rmSync('.tap/node-v8', { recursive: true, force: true });
