import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { PlacementStatus } from './components';
import { KernelUsageModel } from './models';

/** The status bar item showing the current notebook kernel's placement. */
export class PlacementStatusItem extends ReactWidget {
  constructor(options: PlacementStatusItem.IOptions) {
    super();
    this._model = options.model;
    this._trans = options.trans;
    this._flavorLabel = options.flavorLabel;
    this.addClass('jp-hetero-status-item');
  }

  protected render(): JSX.Element {
    const model = this._model;
    return (
      <UseSignal signal={model.changed}>
        {() => (
          <PlacementStatus
            usage={model.usage}
            flavorLabel={model.usage ? this._flavorLabel(model.usage.flavor) : ''}
            trans={this._trans}
          />
        )}
      </UseSignal>
    );
  }

  private readonly _model: KernelUsageModel;
  private readonly _trans: TranslationBundle;
  private readonly _flavorLabel: (flavor: string) => string;
}

/** Types belonging to `PlacementStatusItem`. */
export namespace PlacementStatusItem {
  export interface IOptions {
    model: KernelUsageModel;
    trans: TranslationBundle;
    /** A flavor's display name. */
    flavorLabel: (flavor: string) => string;
  }
}
