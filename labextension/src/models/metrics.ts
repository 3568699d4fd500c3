import type { IWorkloadMetrics } from '../types';

/** One metric of a workload as the panel shows it: its latest figure and a sparkline of its points. */
export interface IMetricCard {
  name: string;
  /** Whether the workload's template declares it (declared ones come first, in the template's order). */
  declared: boolean;
  latest: number;
  unit: string | null;
  source: string;
  /** How many points the series has. */
  points: number;
  /** The SVG path of the sparkline, in a `width` x `height` box; empty below two points. */
  path: string;
}

/** A declared (or measurable) metric without figures, and why. */
export interface IMissingMetric {
  name: string;
  why: string;
}

/** What the metrics view shows of a workload. */
export interface IMetricView {
  cards: IMetricCard[];
  missing: IMissingMetric[];
}

/** The sparkline's box. */
export const SPARK_WIDTH = 120;
export const SPARK_HEIGHT = 28;

/**
 * The cards of a `GET /workloads/{id}/metrics` answer: the declared metrics with figures first, in the template's
 * order, then any other series by name; and each metric without figures with why.
 *
 * ```ts
 * metricView(answer).cards.map(c => [c.name, c.latest]);   // [['loss', 0.31], ['io_write_bytes', 8388608]]
 * ```
 */
export function metricView(answer: IWorkloadMetrics): IMetricView {
  const order = new Map(answer.declared.map((name, i) => [name, i]));
  const cards = answer.series
    .filter(series => series.points.length > 0)
    .map(series => ({
      name: series.name,
      declared: order.has(series.name),
      latest: series.points[series.points.length - 1][1],
      unit: series.unit ?? null,
      source: series.source,
      points: series.points.length,
      path: sparklinePath(series.points.map(point => [point[0], point[1]]))
    }))
    .sort((a, b) => rank(order, a.name) - rank(order, b.name) || a.name.localeCompare(b.name));
  return { cards, missing: answer.not_measured.map(({ name, why }) => ({ name, why })) };
}

function rank(order: Map<string, number>, name: string): number {
  return order.get(name) ?? order.size;
}

/**
 * A polyline through `[at, value]` points scaled into the box (time across, value up); a flat series is drawn
 * along the middle. Empty below two points.
 *
 * ```ts
 * sparklinePath([[0, 1], [1, 0]], 10, 10);   // 'M0,1 L10,9' (1 px of margin above and below)
 * ```
 */
export function sparklinePath(points: [number, number][], width = SPARK_WIDTH, height = SPARK_HEIGHT): string {
  if (points.length < 2) {
    return '';
  }
  const times = points.map(p => p[0]);
  const values = points.map(p => p[1]);
  const [t0, t1] = [Math.min(...times), Math.max(...times)];
  const [v0, v1] = [Math.min(...values), Math.max(...values)];
  const margin = 1;
  const y = (value: number): number =>
    v1 === v0 ? height / 2 : margin + (1 - (value - v0) / (v1 - v0)) * (height - 2 * margin);
  const x = (at: number): number => (t1 === t0 ? 0 : ((at - t0) / (t1 - t0)) * width);
  return points.map((p, i) => `${i === 0 ? 'M' : 'L'}${round(x(p[0]))},${round(y(p[1]))}`).join(' ');
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/**
 * A figure for people to read in its unit: bytes in powers of 1000, MiB as is, others to three significant digits.
 *
 * ```ts
 * formatFigure(8388608, 'bytes');   // '8.4 MB'
 * formatFigure(0.3141, null);       // '0.314'
 * ```
 */
export function formatFigure(value: number, unit: string | null): string {
  if (unit === 'bytes') {
    for (const [suffix, size] of [['TB', 1e12], ['GB', 1e9], ['MB', 1e6], ['kB', 1e3]] as const) {
      if (Math.abs(value) >= size) {
        return `${trim(value / size)} ${suffix}`;
      }
    }
    return `${value} B`;
  }
  const text = trim(value);
  return unit ? (unit === '%' ? `${text}%` : `${text} ${unit}`) : text;
}

function trim(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(3)));
}
