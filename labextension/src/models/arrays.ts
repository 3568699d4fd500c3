import { isFinished } from '../format';
import type { IArrayTask, IBlocker, IWorkload } from '../types';

/** The order an array's row counts its tasks' states in, as `jupyter hetero ls` does: what runs, what waits, how
 * they ended. */
export const TASK_STATE_ORDER = [
  'running',
  'starting',
  'admitted',
  'queued',
  'preempted',
  'inadmissible',
  'succeeded',
  'failed',
  'cancelled',
  'lost'
] as const;

/** One workload of My work that is no array's task. */
export interface IWorkloadEntry {
  kind: 'workload';
  workload: IWorkload;
}

/** An array's listed tasks as one row of My work. */
export interface IArrayEntry {
  kind: 'array';
  /** The array's id: its first task's workload id. */
  id: number;
  /** As Slurm names it: `12[0-99%10]`. */
  label: string;
  /** The array's name (its tasks are named `name[index]`), or null. */
  name: string | null;
  template: string;
  queue: string;
  /** How many tasks the array has; `tasks` may list fewer. */
  size: number;
  /** Its listed tasks, by index. */
  tasks: IWorkload[];
  /** How many listed tasks are in each state, in `TASK_STATE_ORDER`, states with none left out. */
  counts: [string, number][];
  /** When it was submitted (epoch seconds). */
  createdAt: number;
  /** The blocker of its tasks held by its limit (`array-limit`), or null. */
  blocker: IBlocker | null;
  /** Every task of the array ended: nothing left to cancel. */
  finished: boolean;
}

/** A row of My work. */
export type WorkEntry = IWorkloadEntry | IArrayEntry;

/** An array as Slurm names it, from one of its tasks' `array`: its id, its indices and its limit, `12[0-99%10]`. */
export function arrayLabel(array: IArrayTask): string {
  return `${array.id}[${array.indices}${array.limit ? `%${array.limit}` : ''}]`;
}

/**
 * My work's rows: each array's tasks as one row, where the array's newest listed task is, every other workload as
 * it is; the order of `workloads` (newest first) otherwise kept.
 *
 * ```ts
 * groupWork([task(12, 1), task(12, 0), job(11)])   // [{ kind: 'array', id: 12, ... }, { kind: 'workload', ... }]
 * ```
 */
export function groupWork(workloads: readonly IWorkload[]): WorkEntry[] {
  const tasks = new Map<number, IWorkload[]>();
  for (const workload of workloads) {
    if (workload.array) {
      const listed = tasks.get(workload.array.id) ?? [];
      listed.push(workload);
      tasks.set(workload.array.id, listed);
    }
  }
  const entries: WorkEntry[] = [];
  const shown = new Set<number>();
  for (const workload of workloads) {
    const array = workload.array;
    if (!array) {
      entries.push({ kind: 'workload', workload });
    } else if (!shown.has(array.id)) {
      shown.add(array.id);
      entries.push(arrayEntry(tasks.get(array.id) ?? [workload]));
    }
  }
  return entries;
}

/** One array's row from its listed tasks (at least one). */
export function arrayEntry(listed: readonly IWorkload[]): IArrayEntry {
  const tasks = [...listed].sort((a, b) => (a.array?.index ?? 0) - (b.array?.index ?? 0));
  const array = tasks[0].array as IArrayTask;
  const counts: [string, number][] = [];
  for (const state of TASK_STATE_ORDER) {
    const count = tasks.filter(task => task.state === state).length;
    if (count > 0) {
      counts.push([state, count]);
    }
  }
  const name = tasks[0].name ? tasks[0].name.replace(/\[\d+\]$/, '') : null;
  const blocker =
    tasks.flatMap(task => (isFinished(task.state) ? [] : task.blockers ?? [])).find(b => b.kind === 'array-limit') ??
    null;
  return {
    kind: 'array',
    id: array.id,
    label: arrayLabel(array),
    name,
    template: tasks[0].template,
    queue: tasks[0].queue,
    size: array.size,
    tasks,
    counts,
    createdAt: Math.min(...tasks.map(task => task.created_at)),
    blocker,
    finished: tasks.length >= array.size && tasks.every(task => isFinished(task.state))
  };
}
