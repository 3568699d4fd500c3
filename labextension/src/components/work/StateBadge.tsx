import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { stateLabel } from '../../format';

/** Props of `StateBadge`. */
export interface IStateBadgeProps {
  state: string;
  trans: TranslationBundle;
}

/** A workload's state as a coloured, translated badge; `data-state` keeps the API's word. */
export function StateBadge(props: IStateBadgeProps): JSX.Element {
  return (
    <span className={`jp-hetero-badge jp-hetero-state jp-hetero-mod-${props.state}`} data-state={props.state}>
      {stateLabel(props.state, props.trans)}
    </span>
  );
}
