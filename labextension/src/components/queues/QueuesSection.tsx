import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IQueueStatus, Lang } from '../../types';
import { Section } from '../common/Section';
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
    <Section id="queues" title={trans.__('Queues')}>
      {props.queues.length === 0 && <div className="jp-hetero-empty">{trans.__('No queues.')}</div>}
      {props.queues.map(queue => (
        <QueueCard key={queue.name} queue={queue} tenant={props.tenant} lang={props.lang} trans={trans} />
      ))}
    </Section>
  );
}
