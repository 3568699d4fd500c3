import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatCpu, formatMemory } from '../../format';

/** Props of `Meter`. */
export interface IMeterProps {
  /** What is measured, e.g. "Device utilisation"; also the start of the accessible name. */
  label: string;
  used: number;
  total: number;
  /** The amounts as people read them, e.g. "1 / 8". */
  text: string;
  trans: TranslationBundle;
}

/**
 * A thin horizontal bar of `used` out of `total`, red when over.
 *
 * With a positive total the bar is a progress bar named "label: text" and valued in
 * `0..total` (the text says by how much it is over); with none there is nothing to measure
 * against, so the bar is decoration and the label and text say it all.
 */
export function Meter(props: IMeterProps): JSX.Element {
  const { used, total, trans } = props;
  const ratio = total > 0 ? Math.min(used / total, 1) : used > 0 ? 1 : 0;
  const over = used > total;
  const measured = total > 0;
  const bar = measured
    ? {
        role: 'progressbar',
        'aria-label': trans.__('%1: %2', props.label, props.text),
        'aria-valuemin': 0,
        'aria-valuemax': total,
        'aria-valuenow': Math.max(0, Math.min(used, total)),
        'aria-valuetext': props.text
      }
    : { 'aria-hidden': true };
  return (
    <div className="jp-hetero-meter">
      <span className="jp-hetero-meter-label">{props.label}</span>
      <div className={'jp-hetero-meter-track' + (over ? ' jp-hetero-mod-over' : '')} {...bar}>
        <div className="jp-hetero-meter-fill" style={{ width: `${Math.round(ratio * 100)}%` }} />
      </div>
      <span className="jp-hetero-meter-text">{props.text}</span>
    </div>
  );
}

/** Props of `CpuMeter` and `MemoryMeter`: an amount used out of a total, in the API's units. */
export interface IAmountMeterProps {
  used: number;
  total: number;
  trans: TranslationBundle;
}

/** CPU used out of a total, both in milli-cores. */
export function CpuMeter(props: IAmountMeterProps): JSX.Element {
  const { used, total, trans } = props;
  return (
    <Meter label={trans.__('CPU')} used={used} total={total} text={`${formatCpu(used)} / ${formatCpu(total)}`} trans={trans} />
  );
}

/** Memory used out of a total, both in MiB; `label` names which memory (the host's by default). */
export function MemoryMeter(props: IAmountMeterProps & { label?: string }): JSX.Element {
  const { used, total, trans } = props;
  return (
    <Meter
      label={props.label ?? trans.__('Memory')}
      used={used}
      total={total}
      text={`${formatMemory(used)} / ${formatMemory(total)}`}
      trans={trans}
    />
  );
}
