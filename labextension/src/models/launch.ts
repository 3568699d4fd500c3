import { ISignal, Signal } from '@lumino/signaling';

import type { IHeteroService } from '../service';
import type { IPreview, IStartedKernel, ITemplate, IWorkload, Lang, ParameterValues } from '../types';
import { ModelBase } from './base';
import {
  checkJobPath,
  jobPayload,
  parseAfter,
  ParameterProblem,
  parameterValues,
  PathProblem,
  runsJobs,
  runsKernels
} from './parameters';

/**
 * The Launch section: a chosen template, its advanced parameters, a live
 * preview per eligible flavor, and starting a kernel or submitting a job.
 *
 * ```ts
 * const launch = new LaunchModel({ service, lang: 'en' });
 * launch.setTemplates(templates);
 * launch.select('fine-tuning');
 * launch.setValue('devices', '2');           // the preview follows after a short pause
 * launch.kernelStarted.connect((_, kernel) => openNotebook(kernel.kernel_id));
 * await launch.startKernel();
 * ```
 */
export class LaunchModel extends ModelBase {
  constructor(options: LaunchModel.IOptions) {
    super();
    this._service = options.service;
    this._lang = options.lang;
    this._previewDelayMs = options.previewDelayMs ?? 300;
  }

  /**
   * The folder the file browser shows, relative to the server's root (`''` for the root itself): a job launched
   * from the Launch form runs there, as a notebook opened there would run, so its relative paths read from the
   * folder the user was looking at. The panel sends no `python`: the server's default interpreter (the
   * environment JupyterLab and its kernels run in) is the one its user works in, whereas the command line sends
   * the interpreter of the shell it was typed in. The plugin points this at the file browser.
   */
  currentFolder: () => string = () => '';

  /** Emitted with the answer of `POST /kernels` once a kernel runs. */
  get kernelStarted(): ISignal<this, IStartedKernel> {
    return this._kernelStarted;
  }

  /** Emitted with the stored workload once a job is submitted. */
  get submitted(): ISignal<this, IWorkload> {
    return this._submitted;
  }

  get templates(): readonly ITemplate[] {
    return this._templates;
  }

  /** The chosen template, or null before templates are known. */
  get template(): ITemplate | null {
    return this._templates.find(t => t.name === this._selected) ?? null;
  }

  /** What the user typed per parameter name. */
  get raw(): Readonly<Record<string, string>> {
    return this._raw;
  }

  /** Parameters to send, and problems with what the user typed. */
  get parameters(): { values: ParameterValues; problems: Record<string, ParameterProblem> } {
    const template = this.template;
    return template ? parameterValues(template, this._raw) : { values: {}, problems: {} };
  }

  get path(): string {
    return this._path;
  }

  get pathProblem(): PathProblem | null {
    return checkJobPath(this._path);
  }

  /** The "Run after" field as typed: workloads the job waits for (`12, 13:any`). */
  get after(): string {
    return this._after;
  }

  /** Whether the "Run after" field cannot be sent as it is. */
  get afterMalformed(): boolean {
    return parseAfter(this._after) === null;
  }

  get preview(): IPreview | null {
    return this._preview;
  }

  get previewError(): string | null {
    return this._previewError;
  }

  get starting(): boolean {
    return this._inFlight.has('start-kernel');
  }

  get submitting(): boolean {
    return this._inFlight.has('submit');
  }

  get canStartKernel(): boolean {
    const template = this.template;
    return !!template && runsKernels(template) && !this.starting && this._valid();
  }

  get canSubmitJob(): boolean {
    const template = this.template;
    return (
      !!template &&
      runsJobs(template) &&
      !this.submitting &&
      this._valid() &&
      this.pathProblem === null &&
      !this.afterMalformed
    );
  }

  /** The template preselected until the user picks one (the `defaultTemplate` setting). */
  set defaultTemplate(name: string) {
    this._default = name;
    if (!this._userChose && this._templates.some(t => t.name === name)) {
      this._choose(name);
    }
  }

  /** New templates from the server; keeps the choice when it still exists. */
  setTemplates(templates: readonly ITemplate[]): void {
    this._templates = [...templates];
    if (this.template === null && templates.length > 0) {
      const fallback = templates.some(t => t.name === this._default) ? this._default : templates[0].name;
      this._choose(fallback);
      return;
    }
    this.emitChanged();
  }

  /** The user picks a template: its parameters start from the defaults again. */
  select(name: string): void {
    this._userChose = true;
    this._choose(name);
  }

  setValue(name: string, raw: string): void {
    this._raw = { ...this._raw, [name]: raw };
    this.emitChanged();
    this._schedulePreview();
  }

  setPath(path: string): void {
    this._path = path;
    this.emitChanged();
  }

  setAfter(after: string): void {
    this._after = after;
    this.emitChanged();
  }

  /**
   * Ask the server what would happen now. The `flavor` parameter is left out so
   * every eligible flavor stays listed; each row has its own capacity and ETA.
   */
  async refreshPreview(): Promise<boolean> {
    const template = this.template;
    if (!template) {
      return true;
    }
    const generation = ++this._previewGeneration;
    const { values, problems } = this.parameters;
    if (Object.keys(problems).length > 0) {
      return true;
    }
    const parameters = { ...values };
    delete parameters.flavor;
    try {
      const preview = await this._service.previewWorkload({
        template: template.name,
        parameters,
        kind: runsKernels(template) ? 'kernel' : 'job',
        lang: this._lang
      });
      if (generation === this._previewGeneration) {
        this._preview = preview;
        this._previewError = null;
        this.emitChanged();
      }
      return true;
    } catch (error) {
      if (generation === this._previewGeneration) {
        this._previewError = this.failOnce('preview', error, this._previewError);
        this.emitChanged();
      }
      return false;
    }
  }

  /**
   * Start a kernel (`POST /kernels`) of the chosen template and parameters, or of
   * `request` (a launcher item); null when it failed.
   */
  async startKernel(request?: { template: string; parameters?: ParameterValues }): Promise<IStartedKernel | null> {
    const template = request?.template ?? this.template?.name;
    if (!template || this.starting) {
      return null;
    }
    const parameters = request ? (request.parameters ?? {}) : this.parameters.values;
    return this._run('start-kernel', () => this._service.startKernel(template, parameters), this._kernelStarted);
  }

  /**
   * Submit the chosen file as a job of the chosen template and parameters, in the file browser's folder, or
   * `request` (the current notebook, with a template's defaults, in its `cwd`); null when it failed.
   */
  async submitJob(request?: { template: string; path: string; cwd?: string }): Promise<IWorkload | null> {
    const template = request?.template ?? this.template?.name;
    const path = request?.path ?? this._path;
    if (!template || this.submitting || checkJobPath(path) !== null) {
      return null;
    }
    const parameters = request ? {} : this.parameters.values;
    const after = request ? [] : parseAfter(this._after);
    if (after === null) {
      return null;
    }
    // The root is the server's default: only another folder is sent.
    const cwd = (request ? (request.cwd ?? '') : this.currentFolder()).replace(/^\/+|\/+$/g, '');
    const job = {
      template,
      parameters,
      ...jobPayload(path),
      ...(after.length > 0 ? { after } : {}),
      ...(cwd !== '' ? { cwd } : {})
    };
    return this._run('submit', () => this._service.submitWorkload(job), this._submitted);
  }

  dispose(): void {
    clearTimeout(this._previewTimer);
    super.dispose();
  }

  private _choose(name: string): void {
    if (name !== this._selected) {
      this._selected = name;
      this._raw = {};
      this._preview = null;
      this._previewError = null;
    }
    this.emitChanged();
    this._schedulePreview();
  }

  /** One start or submit: busy while it runs, its result announced, its failure reported. */
  private async _run<T>(action: 'start-kernel' | 'submit', call: () => Promise<T>, done: Signal<this, T>): Promise<T | null> {
    this._inFlight.add(action);
    this.emitChanged();
    try {
      const result = await call();
      done.emit(result);
      return result;
    } catch (error) {
      this.fail(action, error);
      return null;
    } finally {
      this._inFlight.delete(action);
      this.emitChanged();
      // Capacity has moved: the preview follows.
      void this.refreshPreview();
    }
  }

  private _valid(): boolean {
    return Object.keys(this.parameters.problems).length === 0;
  }

  private _schedulePreview(): void {
    // What is in flight answers for the old template or values: let nothing land from it.
    ++this._previewGeneration;
    clearTimeout(this._previewTimer);
    this._previewTimer = setTimeout(() => void this.refreshPreview(), this._previewDelayMs);
  }

  private readonly _service: IHeteroService;
  private readonly _lang: Lang;
  private readonly _previewDelayMs: number;
  private readonly _kernelStarted = new Signal<this, IStartedKernel>(this);
  private readonly _submitted = new Signal<this, IWorkload>(this);
  private _templates: ITemplate[] = [];
  private _selected: string | null = null;
  private _default = '';
  private _userChose = false;
  private _raw: Record<string, string> = {};
  private _path = '';
  private _after = '';
  private _preview: IPreview | null = null;
  private _previewError: string | null = null;
  private _previewGeneration = 0;
  private _previewTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  private readonly _inFlight = new Set<'start-kernel' | 'submit'>();
}

/** Types belonging to `LaunchModel`. */
export namespace LaunchModel {
  export interface IOptions {
    service: IHeteroService;
    /** The language preview blockers are asked in. */
    lang: Lang;
    /** Pause after typing before the preview is asked again; 300 ms by default. */
    previewDelayMs?: number;
  }
}
