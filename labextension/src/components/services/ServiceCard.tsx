import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { num } from '../../format';
import type { IService } from '../../types';
import { ActionButton } from '../common/ActionButton';
import { ITrafficPoint, TrafficChart } from './TrafficChart';

/** Props of `ServiceCard`. */
export interface IServiceCardProps {
  service: IService;
  history: readonly ITrafficPoint[];
  trans: TranslationBundle;
  onRollBack: (service: IService) => void;
}

function percent(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : `${num(value * 100)}%`;
}

/** The canary under trial, or how the last rollout ended. */
function RolloutState(props: IServiceCardProps): JSX.Element {
  const { service, trans } = props;
  const rollout = service.rollout;
  if (rollout) {
    return (
      <div className="jp-hetero-service-rollout" data-state="canary">
        <div>
          {trans.__('Canary: revision %1 takes %2 of requests', rollout.revision, percent(rollout.traffic))}
          {rollout.ready_at === null ? ` (${trans.__('starting')})` : ''}
        </div>
        <div className="jp-hetero-hint">
          {trans.__(
            'canary %1 requests, %2 errors; stable %3 requests, %4 errors',
            rollout.canary.requests,
            percent(rollout.canary.error_rate),
            rollout.stable.requests,
            percent(rollout.stable.error_rate)
          )}
        </div>
        <ActionButton
          className="jp-hetero-action-rollback"
          label={trans.__('Roll back')}
          ariaLabel={trans.__('Roll back the canary of %1', service.name)}
          onClick={() => props.onRollBack(service)}
        />
      </div>
    );
  }
  const last = service.revisions[service.revisions.length - 1];
  if (last && (last.outcome === 'promoted' || last.outcome === 'rolled-back')) {
    const violations = (last as { violations?: string[] }).violations ?? [];
    return (
      <div className="jp-hetero-service-rollout" data-state={last.outcome}>
        {last.outcome === 'promoted'
          ? trans.__('Revision %1 was promoted', last.revision)
          : trans.__('Revision %1 was rolled back: %2', last.revision, violations.join('; '))}
      </div>
    );
  }
  return (
    <div className="jp-hetero-service-rollout" data-state="stable">
      {trans.__('Revision %1, stable', service.revision)}
    </div>
  );
}

/** One online service: its endpoint, replicas, traffic, a small chart and its rollout. */
export function ServiceCard(props: IServiceCardProps): JSX.Element {
  const { service, history, trans } = props;
  const latency = service.traffic.latency_ms;
  return (
    <div className="jp-hetero-card jp-hetero-service" data-service={service.name}>
      <h4>{service.name}</h4>
      <div className="jp-hetero-service-endpoint">
        <code>{service.endpoint}</code>
      </div>
      <div className="jp-hetero-service-replicas">
        {trans.__('%1 of %2 replicas ready', service.ready_replicas, service.replicas)}
        {service.target_in_flight ? <span> · {trans.__('scaled by load')}</span> : null}
      </div>
      <div className="jp-hetero-service-traffic">
        {trans.__(
          '%1 requests/s · p95 %2 ms · errors %3',
          num(service.traffic.requests_per_s),
          latency ? num(latency.p95) : '-',
          percent(service.traffic.error_rate)
        )}
      </div>
      <div className="jp-hetero-service-devices">
        {service.device_utilisation
          ? trans.__('Device utilisation: %1%', num(service.device_utilisation.device_util_pct))
          : trans.__('Device utilisation: not measured on these nodes')}
      </div>
      <TrafficChart points={history} trans={trans} />
      <RolloutState {...props} />
    </div>
  );
}
