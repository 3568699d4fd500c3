import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { stateLabel } from '../../format';

/** Props of `LogView`. */
export interface ILogViewProps {
  workloadId: number;
  text: string;
  state: string | null;
  done: boolean;
  error: string | null;
  trans: TranslationBundle;
}

/** A workload's log, kept scrolled to the end while it grows unless the reader scrolled up. */
export function LogView(props: ILogViewProps): JSX.Element {
  const { trans } = props;
  const pre = React.useRef<HTMLPreElement>(null);
  const pinned = React.useRef(true);
  React.useEffect(() => {
    const element = pre.current;
    if (element && pinned.current) {
      element.scrollTop = element.scrollHeight;
    }
  }, [props.text]);
  const status = props.done
    ? trans.__('finished: %1', stateLabel(props.state ?? '', trans))
    : props.state
      ? trans.__('following (%1)…', stateLabel(props.state, trans))
      : trans.__('following…');
  return (
    <div className="jp-hetero-logs" data-workload-id={props.workloadId} data-done={props.done}>
      <div className="jp-hetero-logs-status" role="status">
        {trans.__('Workload %1', props.workloadId)} · {status}
      </div>
      {props.error !== null && (
        <div className="jp-hetero-error" role="alert">
          {props.error}
        </div>
      )}
      <pre
        ref={pre}
        className="jp-hetero-log-text"
        tabIndex={0}
        aria-label={trans.__('Log of workload %1', props.workloadId)}
        onScroll={event => {
          const element = event.currentTarget;
          pinned.current = element.scrollHeight - element.scrollTop - element.clientHeight < 16;
        }}
      >
        {props.text.length > 0 ? props.text : trans.__('(no output yet)')}
      </pre>
    </div>
  );
}
