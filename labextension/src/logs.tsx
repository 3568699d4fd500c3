import { MainAreaWidget, ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { LogView } from './components';
import { heteroIcon } from './icons';
import { LogModel } from './models';

/** The body of a log tab: renders a `LogModel` and follows it while shown. */
class LogContent extends ReactWidget {
  constructor(private readonly _model: LogModel, private readonly _trans: TranslationBundle) {
    super();
    this.addClass('jp-hetero-logs-content');
  }

  protected render(): JSX.Element {
    const model = this._model;
    return (
      <UseSignal signal={model.changed}>
        {() => (
          <LogView
            workloadId={model.workloadId}
            text={model.text}
            state={model.state}
            done={model.done}
            error={model.error}
            trans={this._trans}
          />
        )}
      </UseSignal>
    );
  }
}

/**
 * A main-area tab streaming one workload's log.
 *
 * ```ts
 * const widget = new LogsWidget({ model: new LogModel({ service, workloadId: 7 }), trans });
 * app.shell.add(widget, 'main');     // following starts at once and stops when the tab closes
 * ```
 */
export class LogsWidget extends MainAreaWidget<ReactWidget> {
  constructor(options: LogsWidget.IOptions) {
    super({ content: new LogContent(options.model, options.trans) });
    this._model = options.model;
    this.id = logsWidgetId(options.model.workloadId);
    this.addClass('jp-hetero-logs-widget');
    this.title.label = options.trans.__('Log of workload %1', options.model.workloadId);
    this.title.icon = heteroIcon;
    this.title.closable = true;
    void this._model.follow();
  }

  dispose(): void {
    this._model.dispose();
    super.dispose();
  }

  private readonly _model: LogModel;
}

/** The DOM id of a workload's log tab: one tab per workload. */
export function logsWidgetId(workloadId: number): string {
  return `jp-hetero-logs-${workloadId}`;
}

/** Types belonging to `LogsWidget`. */
export namespace LogsWidget {
  export interface IOptions {
    model: LogModel;
    trans: TranslationBundle;
  }
}
