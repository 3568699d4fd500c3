// The panel's side of the translation catalogs. The catalog itself is kept by the Python tool
// (scripts/i18n.py, with Babel), which extracts these same `trans.__`/`_n`/`_p` calls together with
// the Python strings into jupyter_hetero/locale/<locale>/LC_MESSAGES/jupyter_hetero.po and compiles
// the .json JupyterLab loads from it; this script runs that tool from here.
//
//   node scripts/i18n.mjs          list strings missing from (or stale or fuzzy in) the catalog; exit 1 if any
//   node scripts/i18n.mjs --write  extract the strings into the catalogs (new ones untranslated, stale ones
//                                  dropped) and compile them (then translate the empty ones and run it again)
//
// The Python tool runs with $PYTHON (default python3), which needs Babel. `sourceStrings` finds the calls (`__` and `_n`, whose first string is the key)
// with a regular expression, independently of Babel, for the unit test that cross-checks the .json.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const SOURCE_DIR = join(here, '..', 'src');
export const CATALOG = join(here, '..', '..', 'jupyter_hetero', 'locale', 'zh_CN', 'LC_MESSAGES', 'jupyter_hetero.json');

const CALL = /\btrans\.(?:__|_n)\(\s*'((?:[^'\\]|\\.)*)'/g;

function unescape(literal) {
  return literal.replace(/\\(.)/g, (_, c) => ({ n: '\n', t: '\t' })[c] ?? c);
}

function files(dir) {
  return readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** Every msgid of the source, sorted. */
export function sourceStrings(dir = SOURCE_DIR) {
  const found = new Set();
  for (const file of files(dir)) {
    for (const match of readFileSync(file, 'utf-8').matchAll(CALL)) {
      found.add(unescape(match[1]));
    }
  }
  return [...found].sort();
}

const TOOL = join(here, '..', '..', 'scripts', 'i18n.py');

function tool(...args) {
  const run = spawnSync(process.env.PYTHON ?? 'python3', [TOOL, ...args], { stdio: 'inherit' });
  return run.status ?? 1;
}

function main() {
  const write = process.argv.includes('--write');
  process.exitCode = write ? tool('update') || tool('compile') : tool('check');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main();
}
