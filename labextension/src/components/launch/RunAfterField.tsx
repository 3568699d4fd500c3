import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** Props of `RunAfterField`. */
export interface IRunAfterFieldProps {
  value: string;
  malformed: boolean;
  trans: TranslationBundle;
  onChange: (value: string) => void;
}

/**
 * The optional workloads a job waits for: ids, each optionally with `:ok` (it succeeded, the default),
 * `:any` (it ended) or `:failed`, as the command line's `--after` takes them.
 */
export function RunAfterField(props: IRunAfterFieldProps): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-hetero-field jp-hetero-run-after">
      <label className="jp-hetero-field-label" htmlFor="jp-hetero-run-after">
        {trans.__('Run after')}
      </label>
      <input
        id="jp-hetero-run-after"
        className="jp-mod-styled"
        type="text"
        value={props.value}
        placeholder={trans.__('e.g. 12 or 12:any, 13:failed')}
        aria-invalid={props.malformed}
        aria-describedby="jp-hetero-run-after-hint"
        onChange={event => props.onChange(event.target.value)}
      />
      <span className="jp-hetero-hint" id="jp-hetero-run-after-hint">
        {trans.__('Optional: workloads this job waits for; :ok (succeeded, the default), :any (ended) or :failed.')}
      </span>
      {props.malformed && (
        <span className="jp-hetero-field-problem" role="alert">
          {trans.__('Give workload ids, each as ID, ID:ok, ID:any or ID:failed.')}
        </span>
      )}
    </div>
  );
}
