import * as React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { MyWorkSection } from '../../src/components';
import type { IBlocker, IWorkload } from '../../src/types';
import * as build from '../builders';
import { click, IRendered, render } from '../render';
import { myWorkSectionProps } from './myWork';

let rendered: IRendered | null = null;
afterEach(() => rendered?.unmount());

const LIMIT: IBlocker = {
  kind: 'array-limit',
  flavor: null,
  message: 'array limit: array 12 runs at most 1 tasks at once (1 running, 0 next in line)',
  params: { array: 12, limit: 1, running: 1, next: 0 }
};

/** Job 20; then array 12, `0-2%1`: task 0 succeeded, task 1 runs, task 2 waits on the limit. */
function listed(): IWorkload[] {
  return [
    build.workload({ id: 20 }),
    build.arrayTask(12, 2, { state: 'queued', blockers: [LIMIT] }, { limit: 1 }),
    build.arrayTask(12, 1, { state: 'running', position: null }, { limit: 1 }),
    build.arrayTask(12, 0, { state: 'succeeded', position: null }, { limit: 1 })
  ];
}

function section(
  overrides: Partial<React.ComponentProps<typeof MyWorkSection>> = {}
): React.ComponentProps<typeof MyWorkSection> {
  return myWorkSectionProps({ workloads: listed(), ...overrides });
}

describe('My work with an array', () => {
  it("shows an array's tasks as one row: its label, name, states counted, submission and limit blocker", () => {
    rendered = render(<MyWorkSection {...section()} />);
    const rows = [...rendered.host.querySelectorAll('.jp-hetero-workloads > li')];
    expect(rows.map(row => row.getAttribute('data-workload-id') ?? `array ${row.getAttribute('data-array-id')}`)).toEqual([
      '20',
      'array 12'
    ]);
    const array = rows[1];
    expect(array.querySelector('.jp-hetero-workload-title')?.textContent).toBe('Array 12[0-2%1] shard');
    expect(array.querySelector('.jp-hetero-array-states')?.textContent).toBe('running 1, queued 1, succeeded 1');
    expect(array.textContent).toContain('Array of 3 tasks · template data-preprocessing · queue batch');
    expect(array.querySelector('.jp-hetero-array-submitted')?.textContent).toContain('Submitted ');
    expect([...array.querySelectorAll('.jp-hetero-blocker')].map(b => b.getAttribute('data-kind'))).toEqual(['array-limit']);
    expect(array.querySelector('.jp-hetero-blocker')?.textContent).toBe(LIMIT.message);
    // Collapsed: no task has a row of its own.
    expect(rendered.host.querySelectorAll('.jp-hetero-workload[data-workload-id]')).toHaveLength(1);
    expect(array.querySelector('.jp-hetero-array-toggle')?.getAttribute('aria-expanded')).toBe('false');
  });

  it('expands to its tasks, each the usual row with logs, explain and cancel', () => {
    const onToggleArray = vi.fn();
    const onLogs = vi.fn();
    const onCancel = vi.fn();
    rendered = render(<MyWorkSection {...section({ onToggleArray })} />);
    click(rendered.host.querySelector('.jp-hetero-array-toggle'));
    expect(onToggleArray).toHaveBeenCalledWith(12);

    rendered.rerender(<MyWorkSection {...section({ expandedArrays: new Set([12]), onLogs, onCancel })} />);
    const toggle = rendered.host.querySelector('.jp-hetero-array-toggle');
    expect(toggle?.getAttribute('aria-expanded')).toBe('true');
    expect(toggle?.textContent).toBe('Hide tasks');
    const tasks = rendered.host.querySelector('.jp-hetero-array-tasks');
    expect(tasks?.getAttribute('aria-label')).toBe('Tasks of array 12[0-2%1]');
    const rows = [...(tasks?.querySelectorAll('.jp-hetero-workload[data-workload-id]') ?? [])];
    expect(rows.map(row => [row.getAttribute('data-workload-id'), row.getAttribute('data-state')])).toEqual([
      ['12', 'succeeded'],
      ['13', 'running'],
      ['14', 'queued']
    ]);
    expect(rows[1].querySelector('.jp-hetero-workload-title')?.textContent).toBe('#13 shard[1]');
    expect(rows[1].querySelector('.jp-hetero-action-explain')).not.toBeNull();
    click(rows[1].querySelector('.jp-hetero-action-logs'));
    expect(onLogs).toHaveBeenCalledWith(13);
    click(rows[2].querySelector('.jp-hetero-action-cancel'));
    expect(onCancel).toHaveBeenCalledWith(14); // one task
    expect(rows[0].querySelector('.jp-hetero-action-cancel')).toBeNull(); // it ended
  });

  it('cancels the array only once the user confirmed it in the row', () => {
    const onCancelArray = vi.fn();
    rendered = render(<MyWorkSection {...section({ onCancelArray })} />);
    click(rendered.host.querySelector('.jp-hetero-action-cancel-array'));
    expect(onCancelArray).not.toHaveBeenCalled();
    const dialog = rendered.host.querySelector('.jp-hetero-array-confirm');
    expect(dialog?.getAttribute('role')).toBe('alertdialog');
    expect(dialog?.textContent).toContain('Cancel every unfinished task of array 12[0-2%1]?');
    click(dialog?.querySelector('.jp-hetero-action-keep') ?? null);
    expect(rendered.host.querySelector('.jp-hetero-array-confirm')).toBeNull();
    expect(onCancelArray).not.toHaveBeenCalled();

    click(rendered.host.querySelector('.jp-hetero-action-cancel-array'));
    click(rendered.host.querySelector('.jp-hetero-action-confirm-cancel-array'));
    expect(onCancelArray).toHaveBeenCalledWith(12);
    expect(rendered.host.querySelector('.jp-hetero-array-confirm')).toBeNull();
  });

  it('offers no Cancel array once every task ended, and none while a cancel is in flight', () => {
    const ended = [0, 1, 2].map(index => build.arrayTask(12, index, { state: 'succeeded', position: null }));
    rendered = render(<MyWorkSection {...section({ workloads: ended })} />);
    expect(rendered.host.querySelector('.jp-hetero-array-states')?.textContent).toBe('succeeded 3');
    expect(rendered.host.querySelector('.jp-hetero-action-cancel-array')).toBeNull();
    rendered.rerender(<MyWorkSection {...section({ busy: new Set([12]) })} />);
    expect(rendered.host.querySelector('.jp-hetero-action-cancel-array')?.hasAttribute('disabled')).toBe(true);
  });

  it('says how many of its tasks are listed when the list has only some', () => {
    const some = [build.arrayTask(12, 1, {}, { size: 100 }), build.arrayTask(12, 0, {}, { size: 100 })];
    rendered = render(<MyWorkSection {...section({ workloads: some })} />);
    expect(rendered.host.querySelector('.jp-hetero-array-submitted')?.textContent).toContain('2 of 100 tasks listed');
    expect(rendered.host.querySelector('.jp-hetero-array-toggle')?.textContent).toBe('Tasks (2)');
  });
});
