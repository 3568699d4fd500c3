import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { SPARK_HEIGHT, SPARK_WIDTH, formatFigure, metricView } from '../../models/metrics';
import type { IWorkloadMetrics } from '../../types';

/** Props of `MetricsView`. */
export interface IMetricsViewProps {
  metrics: IWorkloadMetrics;
  trans: TranslationBundle;
  onDismiss: () => void;
}

/**
 * A workload's metrics: each with figures as a sparkline (inline SVG) beside its latest value, unit and source;
 * then each declared one without figures, and why.
 */
export function MetricsView(props: IMetricsViewProps): JSX.Element {
  const { metrics, trans } = props;
  const view = metricView(metrics);
  return (
    <div className="jp-hetero-metrics" role="region" aria-label={trans.__('Metrics of workload %1', metrics.workload)}>
      <div className="jp-hetero-row">
        <strong>{trans.__('Metrics of workload %1', metrics.workload)}</strong>
        <button
          type="button"
          className="jp-Button jp-mod-minimal jp-hetero-dismiss"
          onClick={props.onDismiss}
          aria-label={trans.__('Hide metrics of workload %1', metrics.workload)}
          title={trans.__('Hide')}
        >
          ×
        </button>
      </div>
      <ul className="jp-hetero-metric-list">
        {view.cards.map(card => (
          <li key={card.name} className="jp-hetero-metric" data-metric={card.name} data-declared={card.declared}>
            <span className="jp-hetero-metric-name">{card.name}</span>
            <svg
              className="jp-hetero-sparkline"
              width={SPARK_WIDTH}
              height={SPARK_HEIGHT}
              viewBox={`0 0 ${SPARK_WIDTH} ${SPARK_HEIGHT}`}
              role="img"
              aria-label={trans.__('%1 over time, %2 points', card.name, card.points)}
            >
              {card.path && <path d={card.path} fill="none" stroke="var(--jp-brand-color1)" strokeWidth={1.5} />}
            </svg>
            <span className="jp-hetero-metric-latest">{formatFigure(card.latest, card.unit)}</span>
            <span className="jp-hetero-metric-source">{card.source}</span>
          </li>
        ))}
      </ul>
      {view.missing.length > 0 && (
        <ul className="jp-hetero-metric-missing">
          {view.missing.map(missing => (
            <li key={missing.name} data-metric={missing.name}>
              {trans.__('not measured: %1', missing.why)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
