import type { ICreateSchedule, ISchedule, IUpdateSchedule } from '../types';
import { checkJobPath, jobPayload } from './parameters';

/** The cadences the form offers in one click; `custom` is any cron the user types. */
export type CronPreset = 'hourly' | 'daily' | 'weekly' | 'custom';

/** The cron of each preset: every hour on the hour, every day at 02:00, every Monday at 09:00. */
export const CRON_PRESETS: Readonly<Record<Exclude<CronPreset, 'custom'>, string>> = {
  hourly: '0 * * * *',
  daily: '0 2 * * *',
  weekly: '0 9 * * 1'
};

/**
 * What runs at each due time: a script or notebook by path, or a command; `code` only in an edit of a schedule
 * made from a notebook cell (%%hetero_schedule), whose code the form keeps as it is.
 */
export type SchedulePayload = 'file' | 'command' | 'code';

/** The rule for runs missed while the server was down. */
export type MissedRule = 'run-once' | 'skip';

/** The "New schedule" form as typed. */
export interface IScheduleDraft {
  name: string;
  template: string;
  payload: SchedulePayload;
  path: string;
  command: string;
  cron: string;
  timezone: string;
  missed: MissedRule;
}

/** The form's fields, named as the panel shows them. */
export type DraftField = 'name' | 'template' | 'path' | 'command' | 'cron' | 'timezone' | 'missed';

/** Why a field cannot be sent as typed; the UI words it. */
export type DraftProblem = 'empty' | 'too-long' | 'not-runnable' | 'unclosed-quote' | 'not-five-fields';

/** A schedule's name is at most this long (the API's bound). */
export const NAME_MAX = 100;

/** The preset a cron is, or `custom`. */
export function presetOf(cron: string): CronPreset {
  const text = cron.trim().split(/\s+/).join(' ');
  const found = (Object.keys(CRON_PRESETS) as Array<keyof typeof CRON_PRESETS>).find(p => CRON_PRESETS[p] === text);
  return found ?? 'custom';
}

/**
 * A command line as words, quotes as a shell reads them: `python -c "print(1)"` -> ["python", "-c", "print(1)"];
 * null when a quote is not closed.
 */
export function splitCommand(text: string): string[] | null {
  const words: string[] = [];
  let word: string | null = null;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === quote) {
        quote = null;
      } else if (c === '\\' && quote === '"' && i + 1 < text.length && '"\\'.includes(text[i + 1])) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c === '"' || c === "'") {
      quote = c;
      word = word ?? '';
    } else if (/\s/.test(c)) {
      if (word !== null) {
        words.push(word);
        word = null;
      }
    } else if (c === '\\' && i + 1 < text.length) {
      word = (word ?? '') + text[++i];
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote !== null) {
    return null;
  }
  if (word !== null) {
    words.push(word);
  }
  return words;
}

/**
 * What is wrong with the draft before the server sees it: only what is certain here (empty, too long, not a
 * runnable file, not five fields); the server checks the cron, the zone and the job fully and names the field.
 */
export function checkDraft(draft: IScheduleDraft): Partial<Record<DraftField, DraftProblem>> {
  const problems: Partial<Record<DraftField, DraftProblem>> = {};
  const name = draft.name.trim();
  if (name === '') {
    problems.name = 'empty';
  } else if (name.length > NAME_MAX) {
    problems.name = 'too-long';
  }
  if (draft.template === '') {
    problems.template = 'empty';
  }
  if (draft.payload === 'code') {
    // The stored cell's code, kept: the server checked it when it was scheduled.
  } else if (draft.payload === 'file') {
    const path = checkJobPath(draft.path);
    if (path !== null) {
      problems.path = path;
    }
  } else {
    const words = splitCommand(draft.command);
    if (words === null) {
      problems.command = 'unclosed-quote';
    } else if (words.length === 0) {
      problems.command = 'empty';
    }
  }
  const cron = draft.cron.trim();
  if (cron === '') {
    problems.cron = 'empty';
  } else if (!cron.startsWith('@') && cron.split(/\s+/).length !== 5) {
    problems.cron = 'not-five-fields';
  }
  if (draft.timezone.trim() === '') {
    problems.timezone = 'empty';
  }
  return problems;
}

/** A command's words as one line that `splitCommand` reads back: a word with a space or a quote is double-quoted. */
export function joinCommand(words: readonly string[]): string {
  return words
    .map(word => (word !== '' && !/[\s"'\\]/.test(word) ? word : `"${word.replace(/["\\]/g, c => `\\${c}`)}"`))
    .join(' ');
}

/** A schedule as the form shows it for an edit: its name, template, what runs, cron, zone and missed-runs rule. */
export function draftOf(schedule: ISchedule): IScheduleDraft {
  const job = schedule.job;
  return {
    name: schedule.name,
    template: job.template,
    payload: job.payload === 'command' ? 'command' : job.payload === 'code' ? 'code' : 'file',
    path: job.script?.path ?? job.notebook?.path ?? '',
    command: job.command ? joinCommand(job.command) : '',
    cron: schedule.cron,
    timezone: schedule.timezone,
    missed: schedule.missed
  };
}

/**
 * The body of `PATCH /schedules/{id}`: only what the draft changed of the schedule as it was opened (`original`,
 * from `draftOf`); null when nothing changed. What runs is sent whole when its kind, path or words changed.
 */
export function scheduleChanges(original: IScheduleDraft, draft: IScheduleDraft): IUpdateSchedule | null {
  const changes: IUpdateSchedule = {};
  const name = draft.name.trim();
  if (name !== original.name) {
    changes.name = name;
  }
  const cron = normalCron(draft.cron);
  if (cron !== normalCron(original.cron)) {
    changes.cron = cron;
  }
  const timezone = draft.timezone.trim();
  if (timezone !== original.timezone) {
    changes.timezone = timezone;
  }
  if (draft.missed !== original.missed) {
    changes.missed = draft.missed;
  }
  const job: NonNullable<IUpdateSchedule['job']> = {};
  if (draft.template !== original.template) {
    job.template = draft.template;
  }
  if (draft.payload === 'file' && (original.payload !== 'file' || draft.path.trim() !== original.path)) {
    Object.assign(job, jobPayload(draft.path));
  } else if (draft.payload === 'command') {
    const words = splitCommand(draft.command) ?? [];
    const before = original.payload === 'command' ? splitCommand(original.command) : null;
    if (before === null || words.join('\u0000') !== before.join('\u0000')) {
      job.command = words;
    }
  }
  if (Object.keys(job).length > 0) {
    changes.job = job;
  }
  return Object.keys(changes).length > 0 ? changes : null;
}

/** A cron with its fields one space apart. */
function normalCron(cron: string): string {
  return cron.trim().split(/\s+/).join(' ');
}

/** The body of `POST /schedules` for a draft that `checkDraft` passes. */
export function scheduleBody(draft: IScheduleDraft): ICreateSchedule {
  const payload =
    draft.payload === 'file' ? jobPayload(draft.path) : { command: splitCommand(draft.command) ?? [] };
  return {
    name: draft.name.trim(),
    cron: normalCron(draft.cron),
    timezone: draft.timezone.trim(),
    missed: draft.missed,
    job: { kind: 'job', template: draft.template, parameters: {}, ...payload }
  };
}

/**
 * The form field a server's error names (`cron`, `job.template`, `job.notebook.path`), or null when it is
 * not one of the form's (then the error is shown under the form, its field named).
 */
export function draftFieldOf(field: string | null): DraftField | null {
  if (field === null) {
    return null;
  }
  const [head, part] = field.split('.');
  if (head === 'job') {
    if (part === 'template') {
      return 'template';
    }
    if (part === 'script' || part === 'notebook' || part === 'cwd') {
      return 'path';
    }
    return part === 'command' ? 'command' : null;
  }
  return (['name', 'cron', 'timezone', 'missed'] as const).find(f => f === head) ?? null;
}

/** The browser's own time zone (IANA name), the form's default; `UTC` when it has none. */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** Every IANA zone the browser knows, for the time zone field's suggestions; empty where it cannot list them. */
export function knownTimeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  try {
    return intl.supportedValuesOf ? intl.supportedValuesOf('timeZone') : [];
  } catch {
    return [];
  }
}

/** Wall time in a zone, as "2026-12-08 02:00"; in UTC when the zone is unknown here. */
export function formatWhen(epochS: number, timeZone: string): string {
  const options: Intl.DateTimeFormatOptions = {
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23'
  };
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-CA', { ...options, timeZone });
  } catch {
    format = new Intl.DateTimeFormat('en-CA', { ...options, timeZone: 'UTC' });
  }
  const part = Object.fromEntries(format.formatToParts(new Date(epochS * 1000)).map(p => [p.type, p.value]));
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}`;
}
