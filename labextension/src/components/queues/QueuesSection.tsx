import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IQueueStatus, Lang } from '../../types';
import { QueueCard } from './QueueCard';

/** Props of `QueuesSection`. */
export interface IQueuesSectionProps {
  queues: readonly IQueueStatus[];
  tenant: string | null;
  lang: Lang;
  trans: TranslationBundle;
}

/** Every queue, highest priority first. */
export function QueuesSection(props: IQueuesSectionProps): JSX.Element {
  const { trans } = props;
  return (
    <section className="jp-hetero-queues" aria-labelledby="jp-hetero-queues-title">
      <h3 className="jp-hetero-section-title" id="jp-hetero-queues-title">
        {trans.__('Queues')}
      </h3>
      {props.queues.length === 0 && <div className="jp-hetero-empty">{trans.__('No queues.')}</div>}
      {props.queues.map(queue => (
        <QueueCard key={queue.name} queue={queue} tenant={props.tenant} lang={props.lang} trans={trans} />
      ))}
    </section>
  );
}
