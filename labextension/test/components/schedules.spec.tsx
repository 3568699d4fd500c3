import * as React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { IScheduleFormProps, ISchedulesSectionProps, SchedulesSection } from '../../src/components';
import { CRON_PRESETS, draftOf } from '../../src/models';
import * as build from '../builders';
import { change, click, IRendered, render, trans } from '../render';

let rendered: IRendered | null = null;
afterEach(() => rendered?.unmount());

// 2026-12-07 12:00 UTC: the built schedule's next run (18:00 UTC) is 6 h away.
const NOW = 1_796_644_800_000;

function form(overrides: Partial<Omit<IScheduleFormProps, 'trans'>> = {}): Omit<IScheduleFormProps, 'trans'> {
  return {
    draft: {
      name: '',
      template: 'training',
      payload: 'file',
      path: '',
      command: '',
      cron: CRON_PRESETS.daily,
      timezone: 'Asia/Shanghai',
      missed: 'run-once'
    },
    problems: { name: 'empty', path: 'empty' },
    error: null,
    templates: [build.template({ name: 'training', task_type: 'training', kinds: ['job'], interactive: false })],
    timeZones: ['Asia/Shanghai', 'UTC'],
    creating: false,
    canCreate: false,
    lang: 'en',
    onChange: vi.fn(),
    onPreset: vi.fn(),
    onUseSelection: vi.fn(),
    onCreate: vi.fn(),
    onCancel: vi.fn(),
    ...overrides
  };
}

function props(overrides: Partial<ISchedulesSectionProps> = {}): ISchedulesSectionProps {
  return {
    schedules: [build.schedule()],
    expanded: new Set(),
    busy: new Set(),
    now: NOW,
    me: 'ada',
    trans,
    form: null,
    onNew: vi.fn(),
    onToggleRuns: vi.fn(),
    onPause: vi.fn(),
    onResume: vi.fn(),
    onRunNow: vi.fn(),
    onEdit: vi.fn(),
    onDelete: vi.fn(),
    onLogs: vi.fn(),
    ...overrides
  };
}

const row = (id = 3): Element | null | undefined => rendered?.host.querySelector(`.jp-hetero-schedule[data-schedule-id="${id}"]`);
const text = (selector: string): string | null | undefined => row()?.querySelector(selector)?.textContent;

describe('SchedulesSection', () => {
  it('shows each schedule: cadence in words, zone, next run and last run with its state', () => {
    rendered = render(<SchedulesSection {...props()} />);
    expect(row()?.getAttribute('data-state')).toBe('active');
    expect(text('.jp-hetero-schedule-name')).toBe('nightly-report');
    expect(text('.jp-hetero-schedule-state')).toBe('active');
    expect(text('.jp-hetero-schedule-description')).toBe('every day at 02:00 (Asia/Shanghai)');
    expect(row()?.querySelector('.jp-hetero-schedule-description')?.getAttribute('title')).toBe('0 2 * * *');
    expect(text('.jp-hetero-schedule-meta')).toBe('reports/daily.ipynb · template data-preprocessing · time zone Asia/Shanghai');
    expect(text('.jp-hetero-schedule-next')).toBe('Next run: 2026-12-08 02:00 (in 6 h)');
    expect(text('.jp-hetero-schedule-last')).toBe('Last run: 2026-12-07 02:00, workload 41succeeded');
    expect(row()?.querySelector('.jp-hetero-schedule-last .jp-hetero-state')?.getAttribute('data-state')).toBe('succeeded');
    expect(row()?.querySelector('.jp-hetero-schedule-error')).toBeNull();
    expect(row()?.querySelector('.jp-hetero-schedule-runs')).toBeNull();
  });

  it("says whose a schedule is when it is not the caller's (a tenant admin sees the tenant's)", () => {
    rendered = render(<SchedulesSection {...props()} />);
    expect(row()?.querySelector('.jp-hetero-schedule-owner')).toBeNull();
    rendered.rerender(<SchedulesSection {...props({ me: 'grace' })} />);
    expect(text('.jp-hetero-schedule-owner')).toBe('Owner ada, tenant vision');
  });

  it('says why the last due run was not submitted', () => {
    const schedule = build.schedule({ last_error: "template 'etl' is no longer in the catalog" });
    rendered = render(<SchedulesSection {...props({ schedules: [schedule] })} />);
    expect(text('.jp-hetero-schedule-error')).toBe(
      "The last due run could not be submitted: template 'etl' is no longer in the catalog"
    );
  });

  it('shows a paused schedule with no next run and a Resume action', () => {
    const onResume = vi.fn();
    const schedule = build.schedule({ state: 'paused', next_run_at: null, runs: [], last_run_at: null });
    rendered = render(<SchedulesSection {...props({ schedules: [schedule], onResume })} />);
    expect(text('.jp-hetero-schedule-next')).toBe('Next run: none while paused');
    expect(text('.jp-hetero-schedule-last')).toBe('Last run: none yet');
    expect(row()?.querySelector('.jp-hetero-action-pause')).toBeNull();
    click(row()?.querySelector('button[aria-label="Resume schedule nightly-report"]') ?? null);
    expect(onResume).toHaveBeenCalledWith(3);
  });

  it('pauses and runs now by its id, and disables its actions while one is in flight', () => {
    const onPause = vi.fn();
    const onRunNow = vi.fn();
    rendered = render(<SchedulesSection {...props({ onPause, onRunNow })} />);
    click(row()?.querySelector('button[aria-label="Pause schedule nightly-report"]') ?? null);
    click(row()?.querySelector('button[aria-label="Run schedule nightly-report now"]') ?? null);
    expect(onPause).toHaveBeenCalledWith(3);
    expect(onRunNow).toHaveBeenCalledWith(3);
    rendered.rerender(<SchedulesSection {...props({ onPause, onRunNow, busy: new Set([3]) })} />);
    expect((row()?.querySelector('.jp-hetero-action-run-now') as HTMLButtonElement).disabled).toBe(true);
  });

  it('deletes only once the user confirms, and keeps it when they do not', () => {
    const onDelete = vi.fn();
    rendered = render(<SchedulesSection {...props({ onDelete })} />);
    click(row()?.querySelector('.jp-hetero-action-delete') ?? null);
    expect(onDelete).not.toHaveBeenCalled();
    expect(text('.jp-hetero-schedule-confirm')).toContain(
      'Delete schedule nightly-report? The workloads it submitted stay.'
    );
    click(row()?.querySelector('.jp-hetero-action-keep') ?? null);
    expect(row()?.querySelector('.jp-hetero-schedule-confirm')).toBeNull();
    click(row()?.querySelector('.jp-hetero-action-delete') ?? null);
    click(row()?.querySelector('button[aria-label="Yes, delete schedule nightly-report"]') ?? null);
    expect(onDelete).toHaveBeenCalledWith(3);
  });

  it('expands to its recent runs: workload, due time, state, late', () => {
    const onToggleRuns = vi.fn();
    const onLogs = vi.fn();
    const runs = [
      build.scheduleRun({ workload: 52, state: 'running', due_at: 1_796_666_400, late: true }),
      build.scheduleRun({ workload: 41 })
    ];
    const schedule = build.schedule({ runs });
    rendered = render(<SchedulesSection {...props({ schedules: [schedule], onToggleRuns, onLogs })} />);
    const toggle = row()?.querySelector('.jp-hetero-schedule-toggle-runs') ?? null;
    expect(toggle?.textContent).toBe('Runs (2)');
    expect(toggle?.getAttribute('aria-expanded')).toBe('false');
    click(toggle);
    expect(onToggleRuns).toHaveBeenCalledWith(3);

    rendered.rerender(<SchedulesSection {...props({ schedules: [schedule], onToggleRuns, onLogs, expanded: new Set([3]) })} />);
    const items = [...(row()?.querySelectorAll('.jp-hetero-schedule-run') ?? [])];
    expect(items.map(i => i.getAttribute('data-workload-id'))).toEqual(['52', '41']);
    expect(items[0].textContent).toBe('#52due 2026-12-08 02:00runninglate');
    expect(items[1].querySelector('.jp-hetero-schedule-run-late')).toBeNull();
    click(items[0].querySelector('.jp-hetero-schedule-run-workload'));
    expect(onLogs).toHaveBeenCalledWith(52);
    expect(row()?.querySelector('.jp-hetero-schedule-toggle-runs')?.textContent).toBe('Hide runs');
  });

  it('tells how to make a first schedule, and opens the form', () => {
    const onNew = vi.fn();
    rendered = render(<SchedulesSection {...props({ schedules: [], onNew })} />);
    expect(rendered.host.textContent).toContain('No schedule yet: create one here, or with %%hetero_schedule');
    click(rendered.host.querySelector('.jp-hetero-new-schedule'));
    expect(onNew).toHaveBeenCalled();
  });
});

describe('ScheduleForm', () => {
  const field = (selector: string): HTMLInputElement | HTMLSelectElement =>
    rendered?.host.querySelector(selector) as HTMLInputElement | HTMLSelectElement;

  it("opens on a row's Edit, filled with the schedule, and saves its changes", () => {
    const onEdit = vi.fn();
    rendered = render(<SchedulesSection {...props({ onEdit })} />);
    const edit = row()?.querySelector('.jp-hetero-action-edit');
    expect(edit?.getAttribute('aria-label')).toBe('Edit schedule nightly-report');
    click(edit ?? null);
    expect(onEdit).toHaveBeenCalledWith(3);

    const onCreate = vi.fn();
    const schedule = build.schedule({ missed: 'skip', cron: '30 6 * * MON-FRI' });
    rendered.rerender(
      <SchedulesSection
        {...props({
          onEdit,
          form: form({
            draft: draftOf(schedule),
            problems: {},
            editing: true,
            canCreate: true,
            onCreate,
            templates: [
              build.template({ name: 'training', kinds: ['job'], interactive: false }),
              build.template({ name: 'data-preprocessing', kinds: ['job'], interactive: false })
            ]
          })
        })}
      />
    );
    const shown = rendered.host.querySelector('.jp-hetero-schedule-form');
    expect(shown?.getAttribute('aria-label')).toBe('Edit schedule');
    expect(shown?.getAttribute('data-mode')).toBe('edit');
    expect(field('#jp-hetero-schedule-name').value).toBe('nightly-report');
    expect(field('#jp-hetero-job-path').value).toBe('reports/daily.ipynb');
    expect(field('#jp-hetero-schedule-preset').value).toBe('custom');
    expect(field('#jp-hetero-schedule-cron').value).toBe('30 6 * * MON-FRI');
    expect(field('#jp-hetero-schedule-timezone').value).toBe('Asia/Shanghai');
    expect((rendered.host.querySelector('input[name="jp-hetero-schedule-missed"][value="skip"]') as HTMLInputElement).checked).toBe(true);
    expect(field('.jp-hetero-template-picker select').value).toBe('data-preprocessing');
    const save = rendered.host.querySelector('.jp-hetero-create-schedule') as HTMLButtonElement;
    expect(save.textContent).toBe('Save changes');
    click(save);
    expect(onCreate).toHaveBeenCalled();
  });

  it("shows an edit's refusal under the field it names, and keeps a notebook cell's code as it is", () => {
    const schedule = build.schedule({ job: { ...build.schedule().job, payload: 'code', notebook: null, code: 'print(1)' } });
    const error = { message: 'the hour 25 is outside 0-23', field: 'cron', at: 'cron' as const };
    rendered = render(
      <SchedulesSection
        {...props({ form: form({ draft: draftOf(schedule), problems: {}, error, editing: true, keepsCode: true }) })}
      />
    );
    const refusal = rendered.host.querySelector('.jp-hetero-schedule-cadence .jp-hetero-schedule-server-problem');
    expect(refusal?.textContent).toBe('cron: the hour 25 is outside 0-23');
    expect(field('#jp-hetero-schedule-cron').getAttribute('aria-invalid')).toBe('true');
    const kept = rendered.host.querySelector('input[name="jp-hetero-schedule-payload"][value="code"]') as HTMLInputElement;
    expect(kept.checked).toBe(true);
    expect(kept.parentElement?.textContent).toBe('Its notebook cell’s code, as it is');
    expect(rendered.host.querySelector('#jp-hetero-job-path')).toBeNull();
    expect(rendered.host.querySelector('#jp-hetero-schedule-command')).toBeNull();
  });

  it('offers name, job templates, the file, cadence presets, time zone and the missed-runs rule', () => {
    rendered = render(<SchedulesSection {...props({ form: form() })} />);
    expect(rendered.host.querySelector('.jp-hetero-new-schedule')).toBeNull();
    expect([...field('.jp-hetero-template-picker select').querySelectorAll('option')].map(o => o.value)).toEqual(['training']);
    expect(rendered.host.querySelector('#jp-hetero-job-path')).not.toBeNull();
    expect([...field('#jp-hetero-schedule-preset').querySelectorAll('option')].map(o => o.textContent)).toEqual([
      'Every hour',
      'Every day at 02:00',
      'Every Monday at 09:00',
      'Custom (cron)'
    ]);
    expect(field('#jp-hetero-schedule-preset').value).toBe('daily');
    expect(field('#jp-hetero-schedule-cron').value).toBe('0 2 * * *');
    expect(field('#jp-hetero-schedule-timezone').value).toBe('Asia/Shanghai');
    expect(rendered.host.querySelectorAll('#jp-hetero-schedule-timezones option')).toHaveLength(2);
    expect(rendered.host.querySelector('.jp-hetero-schedule-missed-hint')?.textContent).toBe(
      'Runs missed while the server was down are submitted once, late, when it is back.'
    );
    expect((rendered.host.querySelector('.jp-hetero-create-schedule') as HTMLButtonElement).disabled).toBe(true);
    // Empty fields are not shouted at: the disabled button says enough.
    expect(rendered.host.querySelector('.jp-hetero-field-problem')).toBeNull();
  });

  it('hands every change to the model', () => {
    const onChange = vi.fn();
    const onPreset = vi.fn();
    rendered = render(<SchedulesSection {...props({ form: form({ onChange, onPreset }) })} />);
    change(field('#jp-hetero-schedule-name'), 'nightly');
    change(field('#jp-hetero-job-path'), 'report.ipynb');
    change(field('#jp-hetero-schedule-preset'), 'weekly');
    change(field('#jp-hetero-schedule-cron'), '30 6 * * MON-FRI');
    change(field('#jp-hetero-schedule-timezone'), 'UTC');
    click(rendered.host.querySelector('input[name="jp-hetero-schedule-missed"][value="skip"]'));
    click(rendered.host.querySelector('input[name="jp-hetero-schedule-payload"][value="command"]'));
    expect(onChange.mock.calls.map(c => c[0])).toEqual([
      { name: 'nightly' },
      { path: 'report.ipynb' },
      { cron: '30 6 * * MON-FRI' },
      { timezone: 'UTC' },
      { missed: 'skip' },
      { payload: 'command' }
    ]);
    expect(onPreset).toHaveBeenCalledWith('weekly');
  });

  it('takes a command instead of a file, and explains the skip rule', () => {
    const draft = { ...form().draft, payload: 'command' as const, command: "python -c 'x", missed: 'skip' as const };
    rendered = render(
      <SchedulesSection {...props({ form: form({ draft, problems: { command: 'unclosed-quote' } }) })} />
    );
    expect(rendered.host.querySelector('#jp-hetero-job-path')).toBeNull();
    expect(field('#jp-hetero-schedule-command').value).toBe("python -c 'x");
    expect(rendered.host.querySelector('.jp-hetero-field-problem')?.textContent).toBe('A quote is not closed.');
    expect(rendered.host.querySelector('.jp-hetero-schedule-missed-hint')?.textContent).toBe(
      'Runs missed while the server was down are skipped; it runs next at the next due time.'
    );
  });

  it('shows a custom cron that is not five fields as such', () => {
    const draft = { ...form().draft, cron: '0 2 * *' };
    rendered = render(<SchedulesSection {...props({ form: form({ draft, problems: { cron: 'not-five-fields' } }) })} />);
    expect(field('#jp-hetero-schedule-preset').value).toBe('custom');
    expect(field('#jp-hetero-schedule-cron').getAttribute('aria-invalid')).toBe('true');
    expect(rendered.host.querySelector('.jp-hetero-schedule-cadence .jp-hetero-field-problem')?.textContent).toBe(
      'A cron has five fields: minute hour day-of-month month day-of-week.'
    );
  });

  it.each([
    ['cron', '.jp-hetero-schedule-cadence', "field 'cron': 'every night' is not a cron", "field 'cron': 'every night' is not a cron"],
    ['timezone', '#jp-hetero-schedule-timezone', "unknown time zone 'Mars/Olympus'", "timezone: unknown time zone 'Mars/Olympus'"],
    ['template', '.jp-hetero-template-picker', "template 'etl' does not exist", "job.template: template 'etl' does not exist"]
  ] as const)('shows the server refusal of %s beside its field, the field named', (at, near, message, shown) => {
    const apiField = at === 'template' ? 'job.template' : at;
    rendered = render(<SchedulesSection {...props({ form: form({ error: { message, field: apiField, at } }) })} />);
    const problem = rendered.host.querySelector('.jp-hetero-schedule-server-problem');
    expect(problem?.textContent).toBe(shown);
    expect(problem?.getAttribute('data-field')).toBe(apiField);
    const fieldBox = rendered.host.querySelector(near)?.closest('.jp-hetero-field, label');
    expect(fieldBox?.parentElement?.contains(problem ?? null)).toBe(true);
  });

  it('shows a refusal of a field the form does not have under the form, named', () => {
    const error = { message: '99 is outside the bounds [1, 8]', field: 'job.parameters.devices', at: null };
    rendered = render(<SchedulesSection {...props({ form: form({ error }) })} />);
    expect(rendered.host.querySelector('.jp-hetero-schedule-server-problem')?.textContent).toBe(
      'job.parameters.devices: 99 is outside the bounds [1, 8]'
    );
  });

  it('creates and cancels', () => {
    const onCreate = vi.fn();
    const onCancel = vi.fn();
    rendered = render(<SchedulesSection {...props({ form: form({ canCreate: true, problems: {}, onCreate, onCancel }) })} />);
    click(rendered.host.querySelector('.jp-hetero-create-schedule'));
    click(rendered.host.querySelector('.jp-hetero-cancel-schedule'));
    expect(onCreate).toHaveBeenCalledTimes(1);
    expect(onCancel).toHaveBeenCalledTimes(1);
  });
});
