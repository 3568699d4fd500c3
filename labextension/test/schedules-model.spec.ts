import { describe, expect, it } from 'vitest';

import { HeteroAPIError } from '../src/handler';
import {
  checkDraft,
  CRON_PRESETS,
  draftFieldOf,
  draftOf,
  formatWhen,
  HeteroModel,
  IScheduleDraft,
  presetOf,
  ScheduleModel,
  scheduleBody,
  scheduleChanges,
  splitCommand
} from '../src/models';
import * as build from './builders';
import { FakeService, record } from './fakes';

function draft(overrides: Partial<IScheduleDraft> = {}): IScheduleDraft {
  return {
    name: 'nightly',
    template: 'training',
    payload: 'file',
    path: 'reports/daily.ipynb',
    command: '',
    cron: CRON_PRESETS.daily,
    timezone: 'Asia/Shanghai',
    missed: 'run-once',
    ...overrides
  };
}

function model(service = new FakeService()): ScheduleModel {
  const schedules = new ScheduleModel({ service, lang: 'zh', timeZone: 'Europe/Paris' });
  schedules.setTemplates(service.templates);
  return schedules;
}

describe('the New schedule form', () => {
  it.each([
    ['hourly', '0 * * * *'],
    ['daily', '0 2 * * *'],
    ['weekly', '0 9 * * 1']
  ] as const)('offers %s as %s, and knows it again however it is spaced', (preset, cron) => {
    expect(CRON_PRESETS[preset]).toBe(cron);
    expect(presetOf(`  ${cron.split(' ').join('   ')} `)).toBe(preset);
  });

  it('calls any other cron custom', () => {
    expect(presetOf('30 6 * * MON-FRI')).toBe('custom');
    expect(presetOf('@daily')).toBe('custom');
  });

  it.each([
    ['python export.py --day yesterday', ['python', 'export.py', '--day', 'yesterday']],
    [`python -c "print('a b')"`, ['python', '-c', "print('a b')"]],
    [`echo '' x`, ['echo', '', 'x']],
    ['echo a\\ b', ['echo', 'a b']],
    ['   ', []],
    ['echo "open', null]
  ])('splits the command %j as a shell does', (text, words) => {
    expect(splitCommand(text)).toEqual(words);
  });

  it.each([
    [{}, {}],
    [{ name: '  ' }, { name: 'empty' }],
    [{ name: 'x'.repeat(101) }, { name: 'too-long' }],
    [{ template: '' }, { template: 'empty' }],
    [{ path: 'data.csv' }, { path: 'not-runnable' }],
    [{ payload: 'command' as const, command: '' }, { command: 'empty' }],
    [{ payload: 'command' as const, command: "python -c 'x" }, { command: 'unclosed-quote' }],
    [{ cron: '0 2 * *' }, { cron: 'not-five-fields' }],
    [{ cron: '@weekly' }, {}],
    [{ cron: '' }, { cron: 'empty' }],
    [{ timezone: '' }, { timezone: 'empty' }]
  ])('finds in %j the problems %j before sending', (change, problems) => {
    expect(checkDraft(draft(change))).toEqual(problems);
  });

  it('sends a notebook, script or command as the job of POST /schedules', () => {
    expect(scheduleBody(draft({ name: ' nightly ', cron: ' 0  2 * * * ' }))).toEqual({
      name: 'nightly',
      cron: '0 2 * * *',
      timezone: 'Asia/Shanghai',
      missed: 'run-once',
      job: { kind: 'job', template: 'training', parameters: {}, notebook: { path: 'reports/daily.ipynb' } }
    });
    expect(scheduleBody(draft({ path: '/etl.py', missed: 'skip' })).job).toMatchObject({ script: { path: 'etl.py' } });
    expect(scheduleBody(draft({ payload: 'command', command: 'python etl.py --full' })).job).toMatchObject({
      command: ['python', 'etl.py', '--full']
    });
  });

  it.each([
    ['cron', 'cron'],
    ['timezone', 'timezone'],
    ['name', 'name'],
    ['missed', 'missed'],
    ['job.template', 'template'],
    ['job.notebook.path', 'path'],
    ['job.script', 'path'],
    ['job.cwd', 'path'],
    ['job.command', 'command'],
    ['job.parameters.devices', null],
    ['job.queue', null],
    [null, null]
  ])('shows a server error about %s under the %s field', (field, at) => {
    expect(draftFieldOf(field)).toBe(at);
  });

  it('writes a time in the schedule zone', () => {
    expect(formatWhen(1_796_666_400, 'Asia/Shanghai')).toBe('2026-12-08 02:00');
    expect(formatWhen(1_796_666_400, 'UTC')).toBe('2026-12-07 18:00');
    expect(formatWhen(1_796_666_400, 'Not/AZone')).toBe('2026-12-07 18:00');
  });
});

describe('editing a schedule in the form', () => {
  it('fills the form with the schedule: name, cron, zone, missed rule, template and what runs', () => {
    const notebook = build.schedule({ missed: 'skip', cron: '30 6 * * MON-FRI', timezone: 'UTC' });
    expect(draftOf(notebook)).toEqual({
      name: 'nightly-report',
      template: 'data-preprocessing',
      payload: 'file',
      path: 'reports/daily.ipynb',
      command: '',
      cron: '30 6 * * MON-FRI',
      timezone: 'UTC',
      missed: 'skip'
    });
    const words = ['python', '-c', `print("a b")`, '', 'x\\y'];
    const command = build.schedule({ job: { ...notebook.job, payload: 'command', notebook: null, command: words } });
    expect(draftOf(command)).toMatchObject({ payload: 'command' });
    expect(splitCommand(draftOf(command).command)).toEqual(words); // read back word for word
    const cell = build.schedule({ job: { ...notebook.job, payload: 'code', notebook: null, code: 'print(1)' } });
    expect(draftOf(cell)).toMatchObject({ payload: 'code', path: '', command: '' });
    expect(checkDraft(draftOf(cell))).toEqual({}); // the cell's code is kept as it is
  });

  it.each([
    ['nothing changed (the cron however spaced)', { cron: ' 0  2 * * * ' }, null],
    ['the cron', { cron: '30 1 * * *' }, { cron: '30 1 * * *' }],
    ['the name and the missed rule', { name: ' renamed ', missed: 'skip' }, { name: 'renamed', missed: 'skip' }],
    ['the time zone', { timezone: 'UTC' }, { timezone: 'UTC' }],
    ['the template', { template: 'training' }, { job: { template: 'training' } }],
    ['the notebook', { path: 'reports/weekly.ipynb' }, { job: { notebook: { path: 'reports/weekly.ipynb' } } }],
    ['a command instead', { payload: 'command', command: 'python x.py' }, { job: { command: ['python', 'x.py'] } }]
  ] as Array<[string, Partial<IScheduleDraft>, unknown]>)('sends only what changed: %s', (_name, change, sent) => {
    const original = draftOf(build.schedule());
    expect(scheduleChanges(original, { ...original, ...change })).toEqual(sent);
  });

  it('sends a command only when its words changed', () => {
    const original = draftOf(
      build.schedule({ job: { ...build.schedule().job, payload: 'command', notebook: null, command: ['python', 'a b.py'] } })
    );
    expect(scheduleChanges(original, { ...original, command: `python  'a b.py'` })).toBeNull();
    expect(scheduleChanges(original, { ...original, command: 'python a.py' })).toEqual({ job: { command: ['python', 'a.py'] } });
  });
});

describe('ScheduleModel', () => {
  it('edits a schedule: the form filled with it, PATCH with only what changed, then the list again', async () => {
    const service = new FakeService();
    const schedules = model(service);
    await schedules.refresh();
    schedules.openForm();
    schedules.setDraft({ name: 'half-typed' });
    schedules.edit(3);
    expect(schedules.formOpen).toBe(true);
    expect(schedules.editing?.id).toBe(3);
    expect(schedules.draft).toMatchObject({ name: 'nightly-report', cron: '0 2 * * *', timezone: 'Asia/Shanghai' });
    expect(schedules.canCreate).toBe(false); // nothing changed yet
    schedules.setPreset('hourly');
    expect(schedules.changes).toEqual({ cron: '0 * * * *' });

    const edited = await schedules.create();

    expect(service.callsOf('updateSchedule')).toEqual([['updateSchedule', 3, { cron: '0 * * * *' }]]);
    expect(service.callsOf('createSchedule')).toEqual([]);
    expect(edited?.cron).toBe('0 * * * *');
    expect(schedules.formOpen).toBe(false);
    expect(schedules.editing).toBeNull();
    expect(schedules.schedules[0].cron).toBe('0 * * * *');
    schedules.openForm();
    expect(schedules.draft.name).toBe('half-typed'); // the new schedule's draft, as it was left
  });

  it('keeps an edit open with the server refusal under the field it names', async () => {
    const service = new FakeService();
    service.failures.set('updateSchedule', new HeteroAPIError('cron: the hour 25 is outside 0-23', 400, null, 'cron'));
    const schedules = model(service);
    await schedules.refresh();
    schedules.edit(3);
    schedules.setDraft({ cron: '0 25 * * *' });

    await expect(schedules.create()).resolves.toBeNull();

    expect(schedules.formOpen).toBe(true);
    expect(schedules.editing?.id).toBe(3);
    expect(schedules.formError).toEqual({ message: 'cron: the hour 25 is outside 0-23', field: 'cron', at: 'cron' });
    schedules.closeForm();
    expect(schedules.editing).toBeNull();
    expect(schedules.draft.name).toBe(''); // the new schedule's draft is back
  });

  it('lists the schedules with their descriptions asked in the UI language', async () => {
    const service = new FakeService();
    const schedules = model(service);
    await expect(schedules.refresh()).resolves.toBe(true);
    expect(schedules.schedules.map(s => s.name)).toEqual(['nightly-report']);
    expect(service.callsOf('listSchedules')).toEqual([['listSchedules', 'zh']]);
  });

  it('offers only templates that run jobs, the browser zone and daily at 02:00 by default', () => {
    const schedules = model();
    expect(schedules.templates.map(t => t.name)).toEqual(['fine-tuning', 'training']);
    expect(schedules.draft).toMatchObject({ template: 'fine-tuning', timezone: 'Europe/Paris', cron: '0 2 * * *', missed: 'run-once' });
    schedules.setDraft({ template: 'training' });
    schedules.setTemplates([build.template({ name: 'interactive', kinds: ['kernel'] }), build.template({ name: 'training', kinds: ['job'] })]);
    expect(schedules.templates.map(t => t.name)).toEqual(['training']);
    expect(schedules.draft.template).toBe('training');
  });

  it('creates a schedule from the form, closes it and lists the new one', async () => {
    const service = new FakeService();
    const schedules = model(service);
    const created = record(schedules.created);
    schedules.openForm();
    expect(schedules.canCreate).toBe(false); // no name, no file yet
    schedules.setDraft({ name: 'weekly-etl', payload: 'command', command: 'python etl.py' });
    schedules.setPreset('weekly');
    schedules.setPreset('custom'); // keeps the weekly cron as typed
    expect(schedules.canCreate).toBe(true);

    const schedule = await schedules.create();

    expect(service.callsOf('createSchedule')[0][1]).toEqual({
      name: 'weekly-etl',
      cron: '0 9 * * 1',
      timezone: 'Europe/Paris',
      missed: 'run-once',
      job: { kind: 'job', template: 'fine-tuning', parameters: {}, command: ['python', 'etl.py'] }
    });
    expect(created.map(s => s.name)).toEqual(['weekly-etl']);
    expect(schedule?.name).toBe('weekly-etl');
    expect(schedules.formOpen).toBe(false);
    expect(schedules.draft).toMatchObject({ name: '', command: '', template: 'fine-tuning', timezone: 'Europe/Paris' });
    expect(schedules.schedules.map(s => s.name)).toEqual(['nightly-report', 'weekly-etl']);
  });

  it('keeps the form open with the server refusal under the field it names, until the field changes', async () => {
    const service = new FakeService();
    service.failures.set('createSchedule', new HeteroAPIError("unknown time zone 'Mars/Olympus'", 400, null, 'timezone'));
    const schedules = model(service);
    const failures = record(schedules.failed);
    schedules.openForm();
    schedules.setDraft({ name: 'n', path: 'a.py', timezone: 'Mars/Olympus' });

    await expect(schedules.create()).resolves.toBeNull();

    expect(schedules.formOpen).toBe(true);
    expect(schedules.formError).toEqual({ message: "unknown time zone 'Mars/Olympus'", field: 'timezone', at: 'timezone' });
    expect(failures).toEqual([]); // shown in the form, not as a notification as well
    schedules.setDraft({ timezone: 'UTC' });
    expect(schedules.formError).toBeNull();
  });

  it('sends nothing while the draft has problems', async () => {
    const service = new FakeService();
    const schedules = model(service);
    schedules.setDraft({ name: 'n', path: 'a.py', cron: '0 2 * *' });
    await expect(schedules.create()).resolves.toBeNull();
    expect(service.callsOf('createSchedule')).toEqual([]);
  });

  it('pauses and resumes, then lists again', async () => {
    const service = new FakeService();
    const schedules = model(service);
    await schedules.pause(3);
    expect(schedules.schedules[0]).toMatchObject({ state: 'paused', next_run_at: null });
    await schedules.resume(3);
    expect(schedules.schedules[0].state).toBe('active');
    expect(service.calls.map(c => c[0])).toEqual(['pauseSchedule', 'listSchedules', 'resumeSchedule', 'listSchedules']);
    expect(schedules.busy.size).toBe(0);
  });

  it('runs now: announces the workload and opens the runs to show it', async () => {
    const service = new FakeService();
    const schedules = model(service);
    await schedules.refresh();
    const ran = record(schedules.ran);
    await expect(schedules.runNow(3)).resolves.toBe(true);
    expect(ran.map(r => [r.schedule.id, r.workload.id])).toEqual([[3, 51]]);
    expect(schedules.expanded.has(3)).toBe(true);
    expect(schedules.schedules[0].runs.map(r => r.workload)).toEqual([51, 41]);
  });

  it('reports a refused action with its reason and stays usable', async () => {
    const service = new FakeService();
    service.failures.set('runSchedule', FakeService.error("tenant vision's quota was withdrawn", 403));
    const schedules = model(service);
    const failures = record(schedules.failed);
    await expect(schedules.runNow(3)).resolves.toBe(false);
    expect(failures).toEqual([{ action: 'schedule-run', message: "tenant vision's quota was withdrawn" }]);
    expect(schedules.busy.has(3)).toBe(false);
  });

  it('deletes, and forgets the runs it showed', async () => {
    const service = new FakeService();
    const schedules = model(service);
    schedules.toggleRuns(3);
    await schedules.remove(3);
    expect(service.callsOf('deleteSchedule')).toEqual([['deleteSchedule', 3]]);
    expect(schedules.schedules).toEqual([]);
    expect(schedules.expanded.size).toBe(0);
  });

  it('reports a list that cannot be read once per outage', async () => {
    const service = new FakeService();
    service.failures.set('listSchedules', FakeService.error('database is locked', 503));
    const schedules = model(service);
    const failures = record(schedules.failed);
    await schedules.refresh();
    await schedules.refresh();
    expect(failures).toEqual([{ action: 'refresh', message: 'database is locked' }]);
    expect(schedules.error).toBe('database is locked');
  });

  it('is refreshed with the panel, which hands it the tenant templates', async () => {
    const service = new FakeService();
    const hetero = new HeteroModel({ service, lang: 'en', timeZone: 'UTC' });
    await expect(hetero.refresh()).resolves.toBe(true);
    expect(hetero.schedules.schedules).toHaveLength(1);
    expect(hetero.schedules.templates.map(t => t.name)).toEqual(['fine-tuning', 'training']);
    expect(hetero.schedules.draft.timezone).toBe('UTC');
  });
});
