import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { IPoll, Poll } from '@lumino/polling';

import { heteroIcon } from './icons';
import { HeteroModel } from './model';
import { HeteroPanel, PANEL_ID } from './panel';
import { HeteroService } from './service';

/** The plugin id, also the key of its settings schema. */
const PLUGIN_ID = 'jupyter-hetero:plugin';

/** Gettext domain of every user-facing string of this extension. */
const TRANSLATION_DOMAIN = 'jupyter_hetero';

/** Command ids, namespaced `hetero:`. */
export namespace CommandIDs {
  export const openPanel = 'hetero:open-panel';
}

/** Seconds between refreshes when the user has not set `refreshInterval`. */
const DEFAULT_REFRESH_INTERVAL_S = 10;

/** The upper bound of a poll's backoff; the poll never backs off, but Poll needs one. */
const MAX_POLL_INTERVAL_MS = 300 * 1000;

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A left-sidebar panel for heterogeneous AI compute.',
  autoStart: true,
  optional: [ITranslator, ISettingRegistry, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    settingRegistry: ISettingRegistry | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ): void => {
    const trans = (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);

    const model = new HeteroModel({ service: new HeteroService() });
    const panel = new HeteroPanel({ model, trans });
    app.shell.add(panel, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(panel, 'jupyter-hetero');
    }

    // The poll ticks once at start, then every `refreshInterval` seconds while
    // the browser tab is visible; `model.refresh` never rejects, so it never backs off.
    const poll = new Poll({
      name: 'jupyter-hetero:refresh',
      factory: () => model.refresh(),
      frequency: refreshFrequency(DEFAULT_REFRESH_INTERVAL_S),
      standby: 'when-hidden'
    });
    panel.disposed.connect(() => {
      poll.dispose();
      model.dispose();
    });

    app.commands.addCommand(CommandIDs.openPanel, {
      label: trans.__('Open Hetero Panel'),
      caption: trans.__('Show the Hetero compute panel in the left sidebar'),
      icon: heteroIcon,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    if (palette) {
      palette.addItem({
        command: CommandIDs.openPanel,
        category: trans.__('Hetero')
      });
    }

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = (): void => {
            const seconds = settings.get('refreshInterval').composite as number;
            const frequency = refreshFrequency(seconds);
            if (frequency.interval !== poll.frequency.interval) {
              poll.frequency = frequency;
              // The pending tick was timed with the old interval; start over.
              void poll.refresh();
            }
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => {
          console.error('jupyter-hetero: could not load settings.', reason);
        });
    }
  }
};

function refreshFrequency(seconds: number): IPoll.Frequency {
  const interval =
    Number.isFinite(seconds) && seconds > 0
      ? Math.min(seconds * 1000, MAX_POLL_INTERVAL_MS)
      : Poll.NEVER;
  return { interval, backoff: false, max: MAX_POLL_INTERVAL_MS };
}

export default plugin;
