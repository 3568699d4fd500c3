import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IAlert } from '../../types';

/** Where the alert line remembers whether it is open: for the browser tab's session, in every panel tab. */
export interface IAlertsOpenStore {
  get(): boolean;
  set(open: boolean): void;
}

const OPEN_KEY = 'jp-hetero:alerts-open';

/** The browser session's storage; closed when it cannot be read (a sandboxed frame, storage turned off). */
export const sessionAlertsOpen: IAlertsOpenStore = {
  get: () => {
    try {
      return window.sessionStorage.getItem(OPEN_KEY) === '1';
    } catch {
      return false;
    }
  },
  set: open => {
    try {
      window.sessionStorage.setItem(OPEN_KEY, open ? '1' : '0');
    } catch {
      // Not remembered: it only opens for this render.
    }
  }
};

/** Props of `AlertList`. */
export interface IAlertListProps {
  alerts: readonly IAlert[];
  /** An alert's message in the panel's language. */
  messageOf: (alert: IAlert) => string;
  trans: TranslationBundle;
  /** Where open/closed is remembered (default: the browser session). */
  store?: IAlertsOpenStore;
}

const RANK: Record<IAlert['severity'], number> = { info: 0, warning: 1, critical: 2 };

/** The alerts firing now, as one line above every section ("3 alerts ▸", its worst severity) that opens on click
 * into the list of each alert's severity and message; open or closed is remembered for the session. Nothing when
 * none fires. */
export function AlertList(props: IAlertListProps): JSX.Element | null {
  const { alerts, trans } = props;
  const store = props.store ?? sessionAlertsOpen;
  const [open, setOpen] = React.useState(() => store.get());
  if (alerts.length === 0) {
    return null;
  }
  const severities: Record<IAlert['severity'], string> = {
    info: trans.__('Info'),
    warning: trans.__('Warning'),
    critical: trans.__('Critical')
  };
  const worst = alerts.reduce<IAlert['severity']>(
    (found, alert) => (RANK[alert.severity] > RANK[found] ? alert.severity : found),
    'info'
  );
  const toggle = (): void => {
    store.set(!open);
    setOpen(!open);
  };
  return (
    <div className="jp-hetero-alerts" data-open={open} data-severity={worst}>
      <button
        type="button"
        className="jp-hetero-alerts-toggle"
        aria-expanded={open}
        aria-controls="jp-hetero-alert-list"
        title={open ? trans.__('Hide the alerts') : trans.__('Show the alerts')}
        onClick={toggle}
      >
        {trans._n('%1 alert', '%1 alerts', alerts.length, alerts.length)} {open ? '▾' : '▸'}
      </button>
      {open && (
        <ul id="jp-hetero-alert-list" className="jp-hetero-alert-list" aria-label={trans.__('Alerts firing now')}>
          {alerts.map(alert => (
            <li
              key={alert.id}
              className="jp-hetero-alert"
              data-rule={alert.rule}
              data-severity={alert.severity}
              role={alert.severity === 'info' ? 'status' : 'alert'}
            >
              <strong>{severities[alert.severity]}</strong> {props.messageOf(alert)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
