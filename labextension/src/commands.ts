import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';

import { SectionId } from './components';
import { localized } from './format';
import { heteroIcon } from './icons';
import { LogsWidget, logsWidgetId } from './logs';
import { HeteroModel, IFailure, LogModel, runsKernels } from './models';
import { HeteroPanel, PANEL_ID } from './panel';
import type { IHeteroService } from './service';
import type { ITemplate, ParameterValues } from './types';

/** Command ids, namespaced `hetero:`. */
export namespace CommandIDs {
  export const openPanel = 'hetero:open-panel';
  export const refresh = 'hetero:refresh';
  export const submitCurrentNotebook = 'hetero:submit-current-notebook';
  export const startKernel = 'hetero:start-kernel';
  export const openLogs = 'hetero:open-logs';
}

/** What the commands work with. */
export interface ICommandContext {
  app: JupyterFrontEnd;
  model: HeteroModel;
  panel: HeteroPanel;
  service: IHeteroService;
  trans: TranslationBundle;
  notebooks: INotebookTracker | null;
  fileBrowser: IDefaultFileBrowser | null;
  /** The `defaultTemplate` setting. */
  defaultTemplate: () => string;
  /** Shows a failure to the user. */
  notify: (failure: IFailure) => void;
}

/** Register the `hetero:*` commands. */
export function addCommands(context: ICommandContext): void {
  const { app, model, panel, trans } = context;

  app.commands.addCommand(CommandIDs.openPanel, {
    label: trans.__('Open Hetero Panel'),
    caption: trans.__('Show the Hetero compute panel in the left sidebar'),
    icon: heteroIcon,
    execute: args => {
      if (typeof args.section === 'string') {
        panel.section = args.section as SectionId;
      }
      app.shell.activateById(PANEL_ID);
    }
  });

  app.commands.addCommand(CommandIDs.refresh, {
    label: trans.__('Refresh Hetero Panel'),
    caption: trans.__('Ask the server for fresh templates, queues, nodes and work'),
    execute: () => model.refresh()
  });

  app.commands.addCommand(CommandIDs.submitCurrentNotebook, {
    label: trans.__('Submit Current Notebook as Hetero Job'),
    caption: trans.__('Run the current notebook as a job of the default template'),
    icon: heteroIcon,
    isEnabled: () => !!context.notebooks?.currentWidget,
    execute: async () => {
      const current = context.notebooks?.currentWidget;
      if (!current) {
        return;
      }
      if (current.context.model.dirty) {
        await current.context.save();
      }
      const template = context.defaultTemplate();
      // In the notebook's own folder, where its kernel runs when it is opened.
      const path = current.context.path;
      await model.launch.submitJob({ template, path, cwd: PathExt.dirname(path) });
    }
  });

  app.commands.addCommand(CommandIDs.startKernel, {
    label: args => templateLabel(model, args) ?? trans.__('Start Hetero Kernel'),
    caption: args => {
      const template = findTemplate(model, args);
      return template
        ? localized(template.description, model.lang)
        : trans.__('Start a kernel placed by the Hetero scheduler');
    },
    icon: heteroIcon,
    execute: args => {
      const template = typeof args.template === 'string' ? args.template : context.defaultTemplate();
      const parameters = (args.parameters ?? {}) as ParameterValues;
      if (model.launch.starting) {
        Notification.warning(trans.__('A kernel is already starting; try again when it is placed.'), {
          autoClose: 5000
        });
        return null;
      }
      Notification.info(trans.__('Starting a kernel of template %1…', template), { autoClose: 4000 });
      return model.launch.startKernel({ template, parameters });
    }
  });

  app.commands.addCommand(CommandIDs.openLogs, {
    label: args => trans.__('Log of workload %1', String(args.id ?? '')),
    execute: args => {
      const workloadId = Number(args.id);
      const id = logsWidgetId(workloadId);
      for (const widget of app.shell.widgets('main')) {
        if (widget.id === id) {
          app.shell.activateById(id);
          return;
        }
      }
      const logModel = new LogModel({ service: context.service, workloadId });
      logModel.failed.connect((_, failure) => context.notify(failure));
      const widget = new LogsWidget({ model: logModel, trans });
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
    }
  });
}

/**
 * Keep one launcher item per template that runs kernels: add the new ones, remove those the
 * server no longer has. `items` holds what is in the launcher between calls.
 */
export function syncLauncherItems(
  launcher: ILauncher,
  model: HeteroModel,
  trans: TranslationBundle,
  items: Map<string, IDisposable>
): void {
  const wanted = model.templates.filter(runsKernels);
  for (const [name, item] of items) {
    if (!wanted.some(t => t.name === name)) {
      item.dispose();
      items.delete(name);
    }
  }
  wanted.forEach((template, rank) => {
    if (!items.has(template.name)) {
      const item = launcher.add({
        command: CommandIDs.startKernel,
        args: { template: template.name },
        category: trans.__('Hetero'),
        rank
      });
      items.set(template.name, item);
    }
  });
}

/** Open a new untitled notebook in `cwd` attached to a running kernel. */
export async function openNotebookOnKernel(
  app: JupyterFrontEnd,
  cwd: string,
  kernelId: string
): Promise<void> {
  const created = (await app.commands.execute('docmanager:new-untitled', {
    path: cwd,
    type: 'notebook'
  })) as { path: string };
  await app.commands.execute('docmanager:open', {
    path: created.path,
    factory: 'Notebook',
    kernel: { id: kernelId }
  });
}

function findTemplate(model: HeteroModel, args: ReadonlyPartialJSONObject): ITemplate | undefined {
  return model.templates.find(t => t.name === args.template);
}

function templateLabel(model: HeteroModel, args: ReadonlyPartialJSONObject): string | null {
  const template = findTemplate(model, args);
  return template ? localized(template.display, model.lang, template.name) : null;
}
