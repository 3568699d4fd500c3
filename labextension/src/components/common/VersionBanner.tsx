import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** Props of `VersionBanner`. */
export interface IVersionBannerProps {
  version: string;
  trans: TranslationBundle;
}

/** The server's jupyter-hetero version, e.g. "jupyter-hetero 0.1.0". */
export function VersionBanner(props: IVersionBannerProps): JSX.Element {
  return (
    <div className="jp-hetero-version">
      {props.trans.__('jupyter-hetero %1', props.version)}
    </div>
  );
}
