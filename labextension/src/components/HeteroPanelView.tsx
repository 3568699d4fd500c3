import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorMessage } from './ErrorMessage';
import { VersionBanner } from './VersionBanner';

/** Props of `HeteroPanelView`. */
export interface IHeteroPanelViewProps {
  version: string | null;
  error: string | null;
  loading: boolean;
  trans: TranslationBundle;
  onRefresh: () => void;
}

/** The body of the Hetero sidebar panel. */
export function HeteroPanelView(props: IHeteroPanelViewProps): JSX.Element {
  const { version, error, loading, trans } = props;
  return (
    <div className="jp-hetero-panel-body" aria-busy={loading}>
      <header className="jp-hetero-header">
        <h2 className="jp-hetero-title">{trans.__('Hetero compute')}</h2>
        <button
          type="button"
          className="jp-hetero-refresh jp-Button jp-mod-minimal"
          onClick={props.onRefresh}
          disabled={loading}
          title={trans.__('Refresh from the server')}
        >
          {trans.__('Refresh')}
        </button>
      </header>
      {error !== null && <ErrorMessage message={error} trans={trans} />}
      {version !== null && <VersionBanner version={version} trans={trans} />}
      {version === null && error === null && (
        <div className="jp-hetero-loading">{trans.__('Loading…')}</div>
      )}
    </div>
  );
}
