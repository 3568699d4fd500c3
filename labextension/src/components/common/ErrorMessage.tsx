import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** Props of `ErrorMessage`. */
export interface IErrorMessageProps {
  message: string;
  trans: TranslationBundle;
}

/** Why the panel could not get its data from the server. */
export function ErrorMessage(props: IErrorMessageProps): JSX.Element {
  return (
    <div className="jp-hetero-error" role="alert">
      {props.trans.__('Hetero server error: %1', props.message)}
    </div>
  );
}
