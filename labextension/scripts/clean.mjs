// Removes build outputs named on the command line; a tiny stand-in for rimraf.
import { rmSync } from 'node:fs';

for (const target of process.argv.slice(2)) {
  rmSync(target, { recursive: true, force: true });
}
