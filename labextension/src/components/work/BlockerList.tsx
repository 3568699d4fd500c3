import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IBlocker } from '../../types';

/** Props of `BlockerList`. */
export interface IBlockerListProps {
  blockers: readonly IBlocker[];
  trans: TranslationBundle;
}

/** Why a workload waits, most important first, in the server's (already localised) words. */
export function BlockerList(props: IBlockerListProps): JSX.Element | null {
  if (props.blockers.length === 0) {
    return null;
  }
  return (
    <ol className="jp-hetero-blockers" aria-label={props.trans.__('Why it waits')}>
      {props.blockers.map((blocker, index) => (
        <li key={index} className="jp-hetero-blocker" data-kind={blocker.kind}>
          {blocker.message}
        </li>
      ))}
    </ol>
  );
}
