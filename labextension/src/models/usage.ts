import { HeteroAPIError } from '../handler';
import type { IHeteroService } from '../service';
import type { IKernelUsage } from '../types';
import { ModelBase } from './base';

/**
 * The placement and use of the current notebook's kernel, for the status bar.
 *
 * ```ts
 * const usage = new KernelUsageModel({ service });
 * usage.kernelId = panel.sessionContext.session?.kernel?.id ?? null;
 * await usage.refresh();   // usage is null for kernels that are not hetero kernels (404)
 * ```
 */
export class KernelUsageModel extends ModelBase {
  constructor(options: KernelUsageModel.IOptions) {
    super();
    this._service = options.service;
  }

  /** The kernel being watched, or null. */
  get kernelId(): string | null {
    return this._kernelId;
  }

  set kernelId(id: string | null) {
    if (id === this._kernelId) {
      return;
    }
    this._kernelId = id;
    this._notHetero = null;
    this._usage = null;
    this._error = null;
    this.emitChanged();
    void this.refresh();
  }

  /** The kernel's usage; null when there is no kernel or it is not a hetero kernel. */
  get usage(): IKernelUsage | null {
    return this._usage;
  }

  /** Why the last refresh failed, or null. */
  get error(): string | null {
    return this._error;
  }

  /**
   * Ask again; resolves false on failure. A 404 means "not a hetero kernel", not a
   * failure, and that kernel is not asked about again: it cannot become one.
   */
  refresh(): Promise<boolean> {
    const id = this._kernelId;
    if (id === null || id === this._notHetero) {
      return Promise.resolve(true);
    }
    if (this._asking?.id !== id) {
      const answer = this._ask(id).finally(() => {
        if (this._asking?.answer === answer) {
          this._asking = null;
        }
      });
      this._asking = { id, answer };
    }
    return this._asking.answer;
  }

  /** One request at a time per kernel: refreshes while one is out share its answer. */
  private async _ask(id: string): Promise<boolean> {
    // A later request (the kernel changed, even back to this one) makes this answer stale.
    const ticket = ++this._tickets;
    const current = (): boolean => ticket === this._tickets && id === this._kernelId;
    try {
      const usage = await this._service.getKernelUsage(id);
      if (current()) {
        this._usage = usage;
        this._error = null;
        this.emitChanged();
      }
      return true;
    } catch (error) {
      if (!current()) {
        return true;
      }
      const notHetero = error instanceof HeteroAPIError && error.status === 404;
      this._notHetero = notHetero ? id : null;
      this._usage = null;
      this._error = notHetero ? null : this.failOnce('usage', error, this._error);
      this.emitChanged();
      return notHetero;
    }
  }

  private readonly _service: IHeteroService;
  private _kernelId: string | null = null;
  private _notHetero: string | null = null;
  private _usage: IKernelUsage | null = null;
  private _error: string | null = null;
  private _asking: { id: string; answer: Promise<boolean> } | null = null;
  private _tickets = 0;
}

/** Types belonging to `KernelUsageModel`. */
export namespace KernelUsageModel {
  export interface IOptions {
    service: IHeteroService;
  }
}
