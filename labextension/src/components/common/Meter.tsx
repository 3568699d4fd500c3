import * as React from 'react';

/** Props of `Meter`. */
export interface IMeterProps {
  /** What is measured, e.g. "GPU"; also the start of the accessible name. */
  label: string;
  used: number;
  total: number;
  /** The amounts as people read them, e.g. "1 / 8". */
  text: string;
}

/** A thin horizontal bar of `used` out of `total`, red when over. */
export function Meter(props: IMeterProps): JSX.Element {
  const { used, total } = props;
  const ratio = total > 0 ? Math.min(used / total, 1) : used > 0 ? 1 : 0;
  const over = used > total;
  return (
    <div className="jp-hetero-meter">
      <span className="jp-hetero-meter-label">{props.label}</span>
      <div
        className={'jp-hetero-meter-track' + (over ? ' jp-hetero-mod-over' : '')}
        role="progressbar"
        aria-label={`${props.label}: ${props.text}`}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={used}
      >
        <div className="jp-hetero-meter-fill" style={{ width: `${Math.round(ratio * 100)}%` }} />
      </div>
      <span className="jp-hetero-meter-text">{props.text}</span>
    </div>
  );
}
