import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatDuration, localized } from '../../format';
import type { IQueueStatus, Lang } from '../../types';
import { QuotaList } from '../common/QuotaList';

/** Props of `QueueCard`. */
export interface IQueueCardProps {
  queue: IQueueStatus;
  /** The caller's tenant, whose quota use the queue carries. */
  tenant: string | null;
  lang: Lang;
  trans: TranslationBundle;
}

/** One queue: class, counts, waits over the last day, rules and the tenant's quota use. */
export function QueueCard(props: IQueueCardProps): JSX.Element {
  const { queue, trans } = props;
  const wait = (seconds: number | null): string =>
    seconds === null ? trans.__('no data') : formatDuration(seconds, trans);
  const mayPreempt = queue.preemption?.may_preempt ?? [];
  const titleId = `jp-hetero-queue-${queue.name}`;
  return (
    <article className="jp-hetero-card jp-hetero-queue" data-queue={queue.name} aria-labelledby={titleId}>
      <header className="jp-hetero-card-header">
        <h4 className="jp-hetero-card-title" id={titleId}>
          {localized(queue.display, props.lang, queue.name)}
        </h4>
        <span className="jp-hetero-badge" title={trans.__('Queue class')}>
          {queue.class}
        </span>
        {queue.allowed === false && (
          <span className="jp-hetero-badge jp-hetero-mod-warn">{trans.__('not allowed')}</span>
        )}
      </header>
      {queue.description && <p className="jp-hetero-description">{localized(queue.description, props.lang)}</p>}
      <dl className="jp-hetero-facts">
        <dt>{trans.__('Pending')}</dt>
        <dd className="jp-hetero-queue-pending">{queue.pending}</dd>
        <dt>{trans.__('Running')}</dt>
        <dd className="jp-hetero-queue-running">{queue.running}</dd>
        <dt>{trans.__('Wait p50 / p95 (last day)')}</dt>
        <dd className="jp-hetero-queue-wait">
          {wait(queue.wait_p50_s)} / {wait(queue.wait_p95_s)}
        </dd>
        <dt>{trans.__('Max wait')}</dt>
        <dd>{formatDuration(queue.max_wait_s, trans)}</dd>
        <dt>{trans.__('May preempt')}</dt>
        <dd>{mayPreempt.length > 0 ? mayPreempt.join(', ') : trans.__('nothing')}</dd>
        <dt>{trans.__('Retries on failure')}</dt>
        <dd>{queue.failure?.retries ?? 0}</dd>
        <dt>{trans.__('Priority')}</dt>
        <dd>{queue.priority}</dd>
      </dl>
      <details className="jp-hetero-quota-details">
        <summary>
          {props.tenant
            ? trans.__('Quota of tenant %1 in this queue', props.tenant)
            : trans.__('Quota in this queue')}
        </summary>
        <QuotaList quota={queue.quota} trans={trans} />
      </details>
    </article>
  );
}
