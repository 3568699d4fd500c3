import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** One refresh's figures of a service. */
export interface ITrafficPoint {
  requestsPerS: number;
  p95Ms: number | null;
}

/** Props of `TrafficChart`. */
export interface ITrafficChartProps {
  points: readonly ITrafficPoint[];
  trans: TranslationBundle;
}

const WIDTH = 220;
const HEIGHT = 48;

function path(values: readonly (number | null)[]): string {
  const top = Math.max(...values.map(v => v ?? 0), 1e-9);
  const step = values.length > 1 ? WIDTH / (values.length - 1) : 0;
  return values
    .map((value, i) => (value === null ? null : `${(i * step).toFixed(1)},${(HEIGHT - (value / top) * (HEIGHT - 4) - 2).toFixed(1)}`))
    .filter((point): point is string => point !== null)
    .map((point, i) => `${i === 0 ? 'M' : 'L'}${point}`)
    .join(' ');
}

/** Requests per second and p95 latency over the panel's last refreshes, each line scaled to its own peak. */
export function TrafficChart(props: ITrafficChartProps): JSX.Element {
  const { points, trans } = props;
  if (points.length < 2) {
    return <div className="jp-hetero-hint">{trans.__('The chart fills as the panel refreshes.')}</div>;
  }
  return (
    <svg
      className="jp-hetero-traffic-chart"
      width={WIDTH}
      height={HEIGHT}
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={trans.__('Requests per second and p95 latency, last %1 refreshes', points.length)}
    >
      <path className="jp-hetero-traffic-rps" d={path(points.map(p => p.requestsPerS))} fill="none" />
      <path className="jp-hetero-traffic-p95" d={path(points.map(p => p.p95Ms))} fill="none" />
    </svg>
  );
}
