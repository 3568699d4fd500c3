import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IAlert } from '../types';
import { AlertList } from './common/AlertList';
import { ErrorMessage } from './common/ErrorMessage';
import { ISectionTab, SectionId, sectionPanelId, sectionTabId, SectionTabs } from './common/SectionTabs';
import { VersionBanner } from './common/VersionBanner';

/** Props of `HeteroPanelView`. */
export interface IHeteroPanelViewProps {
  version: string | null;
  error: string | null;
  /** The error is the hub's shared service not answering: the panel says it retries, instead of the error. */
  unreachable?: boolean;
  loading: boolean;
  trans: TranslationBundle;
  onRefresh: () => void;
  tabs: ISectionTab[];
  current: SectionId;
  onSelect: (id: SectionId) => void;
  /** Alerts firing now, shown above the sections, and each one's message in the panel's language. */
  alerts?: readonly IAlert[];
  alertMessage?: (alert: IAlert) => string;
  /** The current section's content. */
  children?: React.ReactNode;
}

/** The body of the Hetero sidebar panel: header, section tabs, the current section, version. */
export function HeteroPanelView(props: IHeteroPanelViewProps): JSX.Element {
  const { version, error, loading, trans, current } = props;
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
      {error !== null && props.unreachable && (
        <div className="jp-hetero-unreachable" role="status" title={error}>
          {trans.__('The shared hetero service is not answering; retrying…')}
        </div>
      )}
      {error !== null && !props.unreachable && <ErrorMessage message={error} trans={trans} />}
      <AlertList alerts={props.alerts ?? []} messageOf={props.alertMessage ?? (alert => alert.message)} trans={trans} />
      <SectionTabs
        tabs={props.tabs}
        current={current}
        label={trans.__('Hetero sections')}
        onSelect={props.onSelect}
      />
      <div
        className="jp-hetero-section"
        role="tabpanel"
        id={sectionPanelId(current)}
        aria-labelledby={sectionTabId(current)}
        data-section={current}
      >
        {props.children}
      </div>
      {version === null && error === null && (
        <div className="jp-hetero-loading">{trans.__('Loading…')}</div>
      )}
      {version !== null && <VersionBanner version={version} trans={trans} />}
    </div>
  );
}
