import { describe, expect, it } from 'vitest';

import { HeteroModel } from '../src/model';
import type { IHeteroService, IVersionInfo } from '../src/service';

/** A service whose answers the test releases by hand, in any order. */
class ManualService implements IHeteroService {
  readonly pending: Array<{
    resolve: (info: IVersionInfo) => void;
    reject: (error: Error) => void;
  }> = [];

  getVersion(): Promise<IVersionInfo> {
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
    });
  }
}

function countEmissions(model: HeteroModel): () => number {
  let count = 0;
  model.changed.connect(() => {
    count += 1;
  });
  return () => count;
}

describe('HeteroModel', () => {
  it('starts empty', () => {
    const model = new HeteroModel({ service: new ManualService() });
    expect(model.version).toBeNull();
    expect(model.error).toBeNull();
    expect(model.loading).toBe(false);
  });

  it('holds the server version after a refresh and signals the change', async () => {
    const service = new ManualService();
    const model = new HeteroModel({ service });
    const emissions = countEmissions(model);

    const refreshed = model.refresh();
    expect(model.loading).toBe(true);
    service.pending[0].resolve({ version: '0.1.0' });
    await refreshed;

    expect(model.version).toBe('0.1.0');
    expect(model.error).toBeNull();
    expect(model.loading).toBe(false);
    expect(emissions()).toBe(2);
  });

  it('keeps the last version and reports the error when a refresh fails', async () => {
    const service = new ManualService();
    const model = new HeteroModel({ service });
    const first = model.refresh();
    service.pending[0].resolve({ version: '0.1.0' });
    await first;

    const second = model.refresh();
    service.pending[1].reject(new Error('Forbidden'));
    await expect(second).resolves.toBeUndefined();

    expect(model.version).toBe('0.1.0');
    expect(model.error).toBe('Forbidden');
    expect(model.loading).toBe(false);
  });

  it('ignores a slow answer that arrives after a newer one', async () => {
    const service = new ManualService();
    const model = new HeteroModel({ service });
    const older = model.refresh();
    const newer = model.refresh();

    service.pending[1].resolve({ version: '0.2.0' });
    await newer;
    service.pending[0].resolve({ version: '0.1.0' });
    await older;

    expect(model.version).toBe('0.2.0');
  });

  it('stops signalling once disposed', async () => {
    const service = new ManualService();
    const model = new HeteroModel({ service });
    const emissions = countEmissions(model);
    model.dispose();

    const refreshed = model.refresh();
    service.pending[0].resolve({ version: '0.1.0' });
    await refreshed;

    expect(model.isDisposed).toBe(true);
    expect(emissions()).toBe(0);
  });
});
