import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { HeteroPanelView } from './components';
import { heteroIcon } from './icons';
import { HeteroModel } from './model';

/** DOM id of the Hetero sidebar panel; also what `shell.activateById` takes. */
export const PANEL_ID = 'jp-hetero-panel';

/** The Hetero left-sidebar panel: renders the model and re-renders on `changed`. */
export class HeteroPanel extends ReactWidget {
  constructor(options: HeteroPanel.IOptions) {
    super();
    this._model = options.model;
    this._trans = options.trans;
    this.id = PANEL_ID;
    this.addClass('jp-hetero-panel');
    this.title.icon = heteroIcon;
    this.title.label = this._trans.__('Hetero');
    this.title.caption = this._trans.__('Hetero');
  }

  protected render(): JSX.Element {
    const model = this._model;
    return (
      <UseSignal signal={model.changed}>
        {() => (
          <HeteroPanelView
            version={model.version}
            error={model.error}
            loading={model.loading}
            trans={this._trans}
            onRefresh={() => void model.refresh()}
          />
        )}
      </UseSignal>
    );
  }

  private readonly _model: HeteroModel;
  private readonly _trans: TranslationBundle;
}

/** Types belonging to `HeteroPanel`. */
export namespace HeteroPanel {
  export interface IOptions {
    model: HeteroModel;
    trans: TranslationBundle;
  }
}
