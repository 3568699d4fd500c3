import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IExplanation } from '../../types';

/** Props of `ExplanationView`. */
export interface IExplanationViewProps {
  explanation: IExplanation;
  trans: TranslationBundle;
  onDismiss: () => void;
}

/** The server's explanation of a workload: a summary and ranked lines. */
export function ExplanationView(props: IExplanationViewProps): JSX.Element {
  const { explanation, trans } = props;
  return (
    <div className="jp-hetero-explanation" role="status">
      <div className="jp-hetero-row">
        <strong className="jp-hetero-explanation-summary">{explanation.summary}</strong>
        <button
          type="button"
          className="jp-Button jp-mod-minimal jp-hetero-dismiss"
          onClick={props.onDismiss}
          aria-label={trans.__('Hide explanation of workload %1', explanation.id)}
          title={trans.__('Hide')}
        >
          ×
        </button>
      </div>
      {explanation.lines.length > 0 && (
        <ul className="jp-hetero-explanation-lines" role="list">
          {explanation.lines.map((line, index) => (
            <li key={index}>{line}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
