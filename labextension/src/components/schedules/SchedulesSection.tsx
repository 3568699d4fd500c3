import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { ISchedule } from '../../types';
import { ActionButton } from '../common/ActionButton';
import { Section } from '../common/Section';
import { IScheduleFormProps, ScheduleForm } from './ScheduleForm';
import { IScheduleActions, ScheduleRow } from './ScheduleRow';

/** Props of `SchedulesSection`. */
export interface ISchedulesSectionProps extends IScheduleActions {
  schedules: readonly ISchedule[];
  expanded: ReadonlySet<number>;
  busy: ReadonlySet<number>;
  /** Now, in epoch milliseconds. */
  now: number;
  /** The caller's user name, once known. */
  me: string | null;
  trans: TranslationBundle;
  /** The "New schedule" form's props while it is open; null while it is closed. */
  form: Omit<IScheduleFormProps, 'trans'> | null;
  onNew: () => void;
}

/** The caller's recurring jobs, each with its next and last run and actions, and the "New schedule" form. */
export function SchedulesSection(props: ISchedulesSectionProps): JSX.Element {
  const { schedules, trans, form } = props;
  return (
    <Section id="schedules" title={trans.__('Schedules')}>
      {form === null ? (
        <div className="jp-hetero-actions">
          <ActionButton primary className="jp-hetero-new-schedule" label={trans.__('New schedule')} onClick={props.onNew} />
        </div>
      ) : (
        <ScheduleForm {...form} trans={trans} />
      )}
      {schedules.length === 0 ? (
        <div className="jp-hetero-hint jp-hetero-schedules-empty">
          {/* The magic as a value: in the text itself, the translator would read %% as one %. */}
          {trans.__('No schedule yet: create one here, or with %1 in a notebook.', '%%hetero_schedule')}
        </div>
      ) : (
        <ul className="jp-hetero-schedules">
          {schedules.map(schedule => (
            <ScheduleRow
              key={schedule.id}
              schedule={schedule}
              expanded={props.expanded.has(schedule.id)}
              busy={props.busy.has(schedule.id)}
              now={props.now}
              me={props.me}
              trans={trans}
              onToggleRuns={props.onToggleRuns}
              onPause={props.onPause}
              onResume={props.onResume}
              onRunNow={props.onRunNow}
              onEdit={props.onEdit}
              onDelete={props.onDelete}
              onLogs={props.onLogs}
            />
          ))}
        </ul>
      )}
    </Section>
  );
}
