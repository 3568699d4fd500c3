import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// @ts-expect-error: a plain ES module script without types
import { CATALOG, sourceStrings } from '../scripts/i18n.mjs';

const catalog = JSON.parse(readFileSync(CATALOG, 'utf-8')) as Record<string, unknown>;
const placeholders = (text: string): string[] => (text.match(/%\d+/g) ?? []).sort();

describe('Simplified Chinese catalog', () => {
  it('has the header JupyterLab needs to load it for domain jupyter_hetero', () => {
    expect(catalog['']).toMatchObject({ domain: 'jupyter_hetero', language: 'zh-CN', plural_forms: 'nplurals=1; plural=0;' });
  });

  it('translates every string of the source, and nothing else', () => {
    const wanted: string[] = sourceStrings();
    const have = Object.keys(catalog).filter(key => key !== '');
    expect(wanted.length).toBeGreaterThan(100);
    expect(wanted.filter(id => !have.includes(id))).toEqual([]);
    expect(have.filter(id => !wanted.includes(id))).toEqual([]);
  });

  it('keeps every placeholder of each string', () => {
    const broken = Object.entries(catalog)
      .filter(([id]) => id !== '')
      .filter(([id, value]) => {
        const translated = (value as string[])[0];
        return translated === '' || placeholders(translated).join() !== placeholders(id).join();
      })
      .map(([id]) => id);
    expect(broken).toEqual([]);
  });
});
