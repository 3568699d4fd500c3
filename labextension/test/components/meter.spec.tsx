import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import { Meter, QuotaList } from '../../src/components';
import * as build from '../builders';
import { IRendered, render, trans } from '../render';

let rendered: IRendered | null = null;
afterEach(() => rendered?.unmount());

/** A bundle that translates like a catalog would, to see which messages go through it. */
function catalog(messages: Record<string, string>): TranslationBundle {
  const bundle = Object.create(trans) as TranslationBundle;
  bundle.__ = (id: string, ...args: unknown[]) =>
    (messages[id] ?? id).replace(/%(\d+)/g, (_, n: string) => String(args[Number(n) - 1]));
  return bundle;
}

describe('Meter', () => {
  it('is a progress bar named "label: amounts" through the catalog', () => {
    rendered = render(<Meter label="CPU" used={8} total={64} text="8 / 64" trans={catalog({ '%1: %2': '%1：%2' })} />);
    const bar = rendered.host.querySelector('[role="progressbar"]');
    expect(bar?.getAttribute('aria-label')).toBe('CPU：8 / 64');
    expect(bar?.getAttribute('aria-valuemin')).toBe('0');
    expect(bar?.getAttribute('aria-valuemax')).toBe('64');
    expect(bar?.getAttribute('aria-valuenow')).toBe('8');
    expect(bar?.getAttribute('aria-valuetext')).toBe('8 / 64');
    expect(bar?.querySelector<HTMLElement>('.jp-hetero-meter-fill')?.style.width).toBe('13%');
  });

  it('keeps its value in range when over, and says the amounts in words', () => {
    rendered = render(<Meter label="Devices" used={3000} total={2000} text="3 / 2" trans={trans} />);
    const bar = rendered.host.querySelector('[role="progressbar"]');
    expect(bar?.classList.contains('jp-hetero-mod-over')).toBe(true);
    expect(bar?.getAttribute('aria-label')).toBe('Devices: 3 / 2');
    expect(bar?.getAttribute('aria-valuenow')).toBe('2000');
    expect(bar?.getAttribute('aria-valuetext')).toBe('3 / 2');
  });

  it('is no progress bar when there is nothing to measure against', () => {
    rendered = render(<Meter label="Devices" used={500} total={0} text="0.5 / 0" trans={trans} />);
    expect(rendered.host.querySelector('[role="progressbar"]')).toBeNull();
    expect(rendered.host.querySelector('[aria-valuemax]')).toBeNull();
    const track = rendered.host.querySelector('.jp-hetero-meter-track');
    expect(track?.getAttribute('aria-hidden')).toBe('true');
    expect(track?.classList.contains('jp-hetero-mod-over')).toBe(true);
    expect(rendered.host.querySelector('.jp-hetero-meter-label')?.textContent).toBe('Devices');
    expect(rendered.host.querySelector('.jp-hetero-meter-text')?.textContent).toBe('0.5 / 0');
  });

  it('shows use without quota in a quota list without an invalid progress bar', () => {
    const quota = build.quota('t4', 1, 0);
    rendered = render(<QuotaList quota={[quota]} trans={trans} />);
    const bars = [...rendered.host.querySelectorAll('[role="progressbar"]')];
    expect(bars.map(bar => bar.getAttribute('aria-label'))).toEqual(['CPU: 8 / 256', 'Memory: 64 GiB / 2 TiB']);
    expect(bars.every(bar => Number(bar.getAttribute('aria-valuemax')) > 0)).toBe(true);
    expect(rendered.host.textContent).toContain('1 / 0');
  });
});
