import { describe, expect, it } from 'vitest';

import {
  checkJobPath,
  checkParameter,
  isNumeric,
  jobPayload,
  parameterValues,
  parseAfter,
  runsJobs,
  runsKernels
} from '../src/models';
import type { IAdvancedParameter } from '../src/types';
import * as build from './builders';

const int: IAdvancedParameter = { name: 'devices', type: 'int', default: 1, min: 1, max: 8, choices: [], description: null };
const memory: IAdvancedParameter = { name: 'memory', type: 'memory', default: 65536, min: 8192, max: 524288, choices: [], description: null };
const choice: IAdvancedParameter = { name: 'variant', type: 'choice', default: null, min: null, max: null, choices: ['nvidia', 'ascend'], description: null };

describe('checkParameter', () => {
  it.each([
    ['empty keeps the default', int, '', null],
    ['a number in bounds', int, '4', null],
    ['below the minimum', int, '0', 'below-min'],
    ['above the maximum', int, '9', 'above-max'],
    ['a fraction where a whole number is needed', int, '1.5', 'not-whole'],
    ['not a number', int, 'two', 'not-a-number'],
    ['memory with units is left to the server', memory, '64Gi', null],
    ['memory in MiB is checked', memory, '1024', 'below-min'],
    ['one of the choices', choice, 'ascend', null],
    ['not one of the choices', choice, 'tpu', 'not-a-choice']
  ])('%s', (_name, parameter, raw, problem) => {
    expect(checkParameter(parameter, raw)).toBe(problem);
  });
});

describe('isNumeric', () => {
  it('is true for plain numbers only, not quantities with units or choices', () => {
    const float: IAdvancedParameter = { ...int, name: 'cpu', type: 'float' };
    const duration: IAdvancedParameter = { ...memory, name: 'time_limit', type: 'duration' };
    expect([int, float, memory, duration, choice].map(isNumeric)).toEqual([true, true, false, false, false]);
  });

  it('makes a non-number a problem for numbers only', () => {
    const float: IAdvancedParameter = { ...int, type: 'float' };
    expect(checkParameter(float, 'two')).toBe('not-a-number');
    expect(checkParameter(float, '1.5')).toBeNull();
  });
});

describe('parameterValues', () => {
  it('sends only set, valid values in the API types', () => {
    const template = build.template();
    const { values, problems } = parameterValues(template, { devices: '2', memory: '64Gi', variant: '', flavor: 'x' });
    expect(values).toEqual({ devices: 2, memory: '64Gi' });
    expect(problems).toEqual({ flavor: 'not-a-choice' });
  });
});

describe('job paths', () => {
  it('runs notebooks as notebooks and anything else as scripts, relative to the root', () => {
    expect(jobPayload('/nb/report.ipynb')).toEqual({ notebook: { path: 'nb/report.ipynb' } });
    expect(jobPayload(' train.py ')).toEqual({ script: { path: 'train.py' } });
    expect(checkJobPath('')).toBe('empty');
    expect(checkJobPath('data.csv')).toBe('not-runnable');
    expect(checkJobPath('a/b.PY')).toBeNull();
  });
});

describe('template kinds', () => {
  it('counts interactive templates as kernel templates', () => {
    expect(runsKernels(build.template({ kinds: ['job'], interactive: true }))).toBe(true);
    expect(runsKernels(build.template({ kinds: ['job'], interactive: false }))).toBe(false);
    expect(runsJobs(build.template({ kinds: ['kernel'] }))).toBe(false);
  });
});

describe('parseAfter', () => {
  it.each([
    ['nothing waits for nothing', '  ', []],
    ['an id waits for it to succeed', '12', [{ workload: 12, condition: 'ok' }]],
    ['commas or spaces between', '12:any, 13:failed 14:ok', [
      { workload: 12, condition: 'any' },
      { workload: 13, condition: 'failed' },
      { workload: 14, condition: 'ok' }
    ]],
    ['an unknown condition', '12:soon', null],
    ['no id', ':ok', null],
    ['an id of 0', '0', null],
    ['words', 'twelve', null]
  ])('%s', (_name, text, expected) => {
    expect(parseAfter(text)).toEqual(expected);
  });
});
