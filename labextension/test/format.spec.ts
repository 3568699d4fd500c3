import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it } from 'vitest';

import {
  apiLang,
  formatDuration,
  formatEta,
  formatMemory,
  formatIndexes,
  formatPlacement,
  formatRequest,
  inadmissibleText,
  localized,
  secondsUntil
} from '../src/format';
import * as build from './builders';

const trans = nullTranslator.load('jupyter_hetero');

describe('format', () => {
  it('maps JupyterLab language codes to the API language', () => {
    expect(apiLang('zh-CN')).toBe('zh');
    expect(apiLang('en-US')).toBe('en');
    expect(apiLang(undefined)).toBe('en');
  });

  it('picks the catalog text in the UI language, falling back to English', () => {
    expect(localized({ en: 'Training', zh: '模型训练' }, 'zh')).toBe('模型训练');
    expect(localized({ en: 'Training', zh: '' }, 'zh')).toBe('Training');
    expect(localized(undefined, 'en', 'training')).toBe('training');
  });

  it.each([
    [512, '512 MiB'],
    [65536, '64 GiB'],
    [1572864, '1.5 TiB']
  ])('memory %d MiB reads %s', (mib, text) => {
    expect(formatMemory(mib)).toBe(text);
  });

  it.each([
    [45, '45 s'],
    [720, '12 min'],
    [5400, '1.5 h'],
    [259200, '3 d']
  ])('%d seconds read %s', (seconds, text) => {
    expect(formatDuration(seconds, trans)).toBe(text);
  });

  it('says when work may start', () => {
    expect(formatEta(0, trans)).toBe('starts now');
    expect(formatEta(720, trans)).toBe('ETA ~12 min');
    expect(formatEta(null, trans)).toBe('ETA unknown');
    expect(secondsUntil(1060, 1000_000)).toBe(60);
    expect(secondsUntil(900, 1000_000)).toBe(0);
  });

  it('summarises a default request', () => {
    expect(formatRequest(build.template().request, trans)).toBe('1× device ≥ 40 GiB · 8 CPU · 64 GiB memory');
    expect(formatRequest({ ...build.template().request, devices: 0, device_milli: 500 }, trans)).toBe(
      '0.5 of a device · 8 CPU · 64 GiB memory'
    );
  });

  it('shows a placement as node and device indexes', () => {
    expect(
      formatPlacement(build.placement('a100-80g', 'gpu-a100-0', [0, 1]))
    ).toBe('gpu-a100-0 [0, 1]');
    expect(formatPlacement(build.placement('cpu-standard', 'cpu-0'))).toBe('cpu-0');
    expect(formatPlacement(null)).toBe('');
  });
});

describe('formatIndexes', () => {
  it('writes consecutive indexes as runs', () => {
    expect(formatIndexes([6, 0, 1, 2, 3])).toBe('0-3, 6');
    expect(formatIndexes([4])).toBe('4');
    expect(formatIndexes([1, 3, 5])).toBe('1, 3, 5');
    expect(formatIndexes([])).toBe('');
  });
});

describe('inadmissibleText', () => {
  const kinds = (...names: string[]) => ({ blockers: names.map(kind => ({ kind })), reason: null });
  it.each([
    [kinds('exceeds-quota'), "Request exceeds the tenant's quota: it can never run as asked;"],
    [kinds('exceeds-quota-not-preemptible', 'exceeds-quota'), "Request exceeds the tenant's quota: it can never run"],
    [kinds('exceeds-quota', 'device-count'), 'No node or quota can ever give it what it asks;'],
    [kinds('node-lost'), 'The nodes of its flavor were lost;'],
    [kinds('cordoned'), 'The nodes of its flavor are cordoned;'],
    [kinds('node-lost', 'cordoned'), 'The nodes of its flavors are lost or cordoned;'],
    [kinds('node-lost', 'device-count', 'no-nodes'), 'The nodes of its flavor were lost;'],
    [kinds('cordoned', 'no-nodes'), 'The nodes of its flavor are cordoned;'],
    [kinds('device-count', 'no-nodes'), 'No node can ever hold it;'],
    // Before the scheduler looked at it again (a restart), only the stored reason says which it is.
    [{ blockers: [], reason: "its tenant's quota can never give it what it asks: ..." }, 'Request exceeds'],
    [{ blockers: [], reason: 'its nodes were lost: node lost: ...' }, 'The nodes of its flavor were lost;'],
    [{ blockers: [], reason: 'the reloaded catalog has no queue q; ...' }, 'The reloaded catalog no longer has its'],
    [{ blockers: [], reason: null }, 'No node can ever hold it;']
  ])('says why from what its blockers have in common (%#)', (workload, start) => {
    expect(inadmissibleText(workload, trans).startsWith(start)).toBe(true);
  });
});
