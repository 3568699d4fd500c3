// Keeps the Simplified Chinese catalog in line with the source strings.
//
//   node scripts/i18n.mjs          list strings missing from (or stale in) the catalog; exit 1 if any
//   node scripts/i18n.mjs --write  add missing strings with an empty translation, drop stale ones,
//                                  sort, and rewrite the catalog (then translate the empty ones)
//
// Strings are found as `trans.__('...')` calls with a single-quoted literal first argument,
// the only form the source uses, so a regular expression is enough.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const SOURCE_DIR = join(here, '..', 'src');
export const CATALOG = join(here, '..', '..', 'jupyter_hetero', 'locale', 'zh_CN', 'LC_MESSAGES', 'jupyter_hetero.json');

const CALL = /\btrans\.__\(\s*'((?:[^'\\]|\\.)*)'/g;

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

function main() {
  const catalog = JSON.parse(readFileSync(CATALOG, 'utf-8'));
  const wanted = sourceStrings();
  const have = Object.keys(catalog).filter(key => key !== '');
  const missing = wanted.filter(id => !(id in catalog) || catalog[id][0] === '');
  const stale = have.filter(id => !wanted.includes(id));
  if (process.argv.includes('--write')) {
    const next = { '': catalog[''] };
    for (const id of wanted) {
      next[id] = catalog[id] ?? [''];
    }
    writeFileSync(CATALOG, JSON.stringify(next, null, 2) + '\n');
  }
  for (const id of missing) console.log(`missing: ${JSON.stringify(id)}`);
  for (const id of stale) console.log(`stale:   ${JSON.stringify(id)}`);
  process.exitCode = missing.length + stale.length > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main();
}
