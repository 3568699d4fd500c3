import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IAlert } from '../../types';

/** Props of `AlertList`. */
export interface IAlertListProps {
  alerts: readonly IAlert[];
  /** An alert's message in the panel's language. */
  messageOf: (alert: IAlert) => string;
  trans: TranslationBundle;
}

/** The alerts firing now, above every section: severity and what is wrong. Nothing when none fires. */
export function AlertList(props: IAlertListProps): JSX.Element | null {
  const { alerts, trans } = props;
  if (alerts.length === 0) {
    return null;
  }
  const severities: Record<IAlert['severity'], string> = {
    info: trans.__('Info'),
    warning: trans.__('Warning'),
    critical: trans.__('Critical')
  };
  return (
    <ul className="jp-hetero-alerts" aria-label={trans.__('Alerts firing now')}>
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
  );
}
