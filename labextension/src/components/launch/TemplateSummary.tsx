import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatDuration, formatRequest, kindLabel, localized } from '../../format';
import type { ITemplate, Lang } from '../../types';

/** Props of `TemplateSummary`. */
export interface ITemplateSummaryProps {
  template: ITemplate;
  lang: Lang;
  trans: TranslationBundle;
}

/** A template's description, default request, queue, kinds and limits. */
export function TemplateSummary(props: ITemplateSummaryProps): JSX.Element {
  const { template, trans } = props;
  return (
    <div className="jp-hetero-template-summary">
      <p className="jp-hetero-description">{localized(template.description, props.lang)}</p>
      <dl className="jp-hetero-facts">
        <dt>{trans.__('Default request')}</dt>
        <dd className="jp-hetero-default-request">{formatRequest(template.request, trans)}</dd>
        <dt>{trans.__('Queue')}</dt>
        <dd>{template.queue}</dd>
        <dt>{trans.__('Runs as')}</dt>
        <dd>{template.kinds.map(kind => kindLabel(kind, trans)).join(', ')}</dd>
        {template.time_limit_s ? (
          <>
            <dt>{trans.__('Time limit')}</dt>
            <dd>{formatDuration(template.time_limit_s, trans)}</dd>
          </>
        ) : null}
      </dl>
    </div>
  );
}
