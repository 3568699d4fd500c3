import type { IAfter, ITemplate, IAdvancedParameter, ParameterValues } from '../types';

/** Why a typed parameter value cannot be sent; the UI words it. */
export type ParameterProblem = 'not-a-number' | 'not-whole' | 'below-min' | 'above-max' | 'not-a-choice';

/** Why a job path cannot be submitted. */
export type PathProblem = 'empty' | 'not-runnable';

const NUMBER = /^\s*-?\d+(\.\d+)?\s*$/;

/** Whether a parameter is a plain number (`int` or `float`), as opposed to a quantity with units or a choice. */
export function isNumeric(parameter: IAdvancedParameter): boolean {
  return parameter.type === 'int' || parameter.type === 'float';
}

/**
 * The value the API takes for what the user typed: numbers for numeric
 * parameters; memory and durations as typed ("64Gi", "2h") unless plain numbers.
 */
function parameterValue(parameter: IAdvancedParameter, raw: string): number | string {
  const text = raw.trim();
  if (parameter.type === 'choice') {
    return text;
  }
  if (isNumeric(parameter) || NUMBER.test(text)) {
    return Number(text);
  }
  return text;
}

/** What is wrong with a typed value, or null; units are left to the server to check. */
export function checkParameter(parameter: IAdvancedParameter, raw: string): ParameterProblem | null {
  const text = raw.trim();
  if (text === '') {
    return null;
  }
  if (parameter.type === 'choice') {
    return parameter.choices.includes(text) ? null : 'not-a-choice';
  }
  if (!NUMBER.test(text)) {
    return isNumeric(parameter) ? 'not-a-number' : null;
  }
  const value = Number(text);
  if (parameter.type === 'int' && !Number.isInteger(value)) {
    return 'not-whole';
  }
  if (parameter.min !== null && value < parameter.min) {
    return 'below-min';
  }
  if (parameter.max !== null && value > parameter.max) {
    return 'above-max';
  }
  return null;
}

/** The parameters to send for a template: only those the user set, and only valid ones. */
export function parameterValues(
  template: ITemplate,
  raw: Readonly<Record<string, string>>
): { values: ParameterValues; problems: Record<string, ParameterProblem> } {
  const values: ParameterValues = {};
  const problems: Record<string, ParameterProblem> = {};
  for (const parameter of template.parameters) {
    const text = raw[parameter.name] ?? '';
    if (text.trim() === '') {
      continue;
    }
    const problem = checkParameter(parameter, text);
    if (problem) {
      problems[parameter.name] = problem;
    } else {
      values[parameter.name] = parameterValue(parameter, text);
    }
  }
  return { values, problems };
}

/** The files a job can run: Python scripts and notebooks. */
export const RUNNABLE = /\.(py|ipynb)$/i;

/** Whether a path names something a job can run, and if not why. */
export function checkJobPath(path: string): PathProblem | null {
  const text = path.trim();
  if (text === '') {
    return 'empty';
  }
  return RUNNABLE.test(text) ? null : 'not-runnable';
}

const AFTER = /^([1-9]\d*)(?::(ok|any|failed))?$/;

/**
 * The "Run after" field: workload ids, each with an optional condition, separated by commas or spaces
 * (`"12, 13:any"`), as the API's `after`; null when a part is not `ID`, `ID:ok`, `ID:any` or `ID:failed`.
 */
export function parseAfter(text: string): IAfter[] | null {
  const after: IAfter[] = [];
  for (const part of text.split(/[\s,]+/).filter(p => p !== '')) {
    const match = AFTER.exec(part);
    if (!match) {
      return null;
    }
    after.push({ workload: Number(match[1]), condition: (match[2] ?? 'ok') as IAfter['condition'] });
  }
  return after;
}

/** The job payload for a path: notebooks run as notebooks, anything else as a script. */
export function jobPayload(path: string): { script: { path: string } } | { notebook: { path: string } } {
  const text = path.trim().replace(/^\/+/, '');
  return /\.ipynb$/i.test(text) ? { notebook: { path: text } } : { script: { path: text } };
}

/** Whether a template is interactive: it starts kernels, and gets a launcher item. */
export function runsKernels(template: ITemplate): boolean {
  return template.interactive === true || template.kinds.includes('kernel');
}

/** Whether a template can run jobs. */
export function runsJobs(template: ITemplate): boolean {
  return template.kinds.includes('job');
}
