import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { PathProblem } from '../../models/parameters';

/** Props of `JobPathPicker`. */
export interface IJobPathPickerProps {
  path: string;
  problem: PathProblem | null;
  trans: TranslationBundle;
  onChange: (path: string) => void;
  /** Fill the field from the file browser's selection. */
  onUseSelection: () => void;
  /** Fill the field from a file dialog; no "Browse" button without it. */
  onBrowse?: () => void;
}

/**
 * The script or notebook a job runs: a path under the server root, typed, chosen in a file
 * dialog, or taken from the file browser's selection.
 */
export function JobPathPicker(props: IJobPathPickerProps): JSX.Element {
  const { trans, problem } = props;
  const showProblem = problem === 'not-runnable';
  return (
    <div className="jp-hetero-field jp-hetero-job-path">
      <label className="jp-hetero-field-label" htmlFor="jp-hetero-job-path">
        {trans.__('Script or notebook')}
      </label>
      <div className="jp-hetero-row">
        <input
          id="jp-hetero-job-path"
          className="jp-mod-styled"
          type="text"
          value={props.path}
          placeholder={trans.__('train.py or report.ipynb')}
          aria-invalid={showProblem}
          aria-describedby="jp-hetero-job-path-hint"
          onChange={event => props.onChange(event.target.value)}
        />
        {props.onBrowse && (
          <button
            type="button"
            className="jp-Button jp-mod-styled jp-mod-reject jp-hetero-browse"
            onClick={props.onBrowse}
            title={trans.__('Choose a script or notebook')}
          >
            {trans.__('Browse…')}
          </button>
        )}
        <button
          type="button"
          className="jp-Button jp-mod-styled jp-mod-reject jp-hetero-use-selection"
          onClick={props.onUseSelection}
          title={trans.__('Use selected file from the file browser')}
          aria-label={trans.__('Use selected file from the file browser')}
        >
          {trans.__('Use selected')}
        </button>
      </div>
      <span className="jp-hetero-hint" id="jp-hetero-job-path-hint">
        {trans.__('Relative to the server root.')}
      </span>
      {showProblem && (
        <span className="jp-hetero-field-problem" role="alert">
          {trans.__('Choose a .py script or an .ipynb notebook.')}
        </span>
      )}
    </div>
  );
}
