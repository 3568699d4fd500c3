import { describe, expect, it } from 'vitest';

import { LaunchModel } from '../src/models';
import * as build from './builders';
import { FakeService, record } from './fakes';

function model(service = new FakeService()): { launch: LaunchModel; service: FakeService } {
  const launch = new LaunchModel({ service, lang: 'en', previewDelayMs: 0 });
  launch.setTemplates(service.templates);
  return { launch, service };
}

describe('LaunchModel', () => {
  it('preselects the default template until the user picks one', () => {
    const { launch, service } = model();
    launch.defaultTemplate = 'training';
    expect(launch.template?.name).toBe('training');
    launch.select('fine-tuning');
    launch.defaultTemplate = 'training';
    expect(launch.template?.name).toBe('fine-tuning');
    expect(service.templates).toHaveLength(2);
  });

  it('previews with only the parameters the user set, leaving the flavor out', async () => {
    const { launch, service } = model();
    launch.setValue('devices', '2');
    launch.setValue('flavor', 'a100-80g');
    await launch.refreshPreview();
    const request = service.callsOf('previewWorkload').at(-1)?.[1];
    expect(request).toEqual({ template: 'fine-tuning', parameters: { devices: 2 }, kind: 'kernel', lang: 'en' });
    expect(launch.preview?.flavors).toHaveLength(2);
  });

  it('finds bad values before asking the server, and blocks starting', async () => {
    const { launch, service } = model();
    launch.setValue('devices', '9');
    expect(launch.parameters.problems).toEqual({ devices: 'above-max' });
    expect(launch.canStartKernel).toBe(false);
    const before = service.callsOf('previewWorkload').length;
    await launch.refreshPreview();
    expect(service.callsOf('previewWorkload')).toHaveLength(before);
  });

  it('shows a preview error from the server', async () => {
    const { launch, service } = model();
    service.failures.set('previewWorkload', FakeService.error('parameters.memory: 64G is not a quantity'));
    const failures = record(launch.failed);
    await expect(launch.refreshPreview()).resolves.toBe(false);
    expect(launch.previewError).toBe('parameters.memory: 64G is not a quantity');
    expect(failures).toHaveLength(1);
  });

  it('starts a kernel with the chosen parameters and announces it', async () => {
    const { launch, service } = model();
    const started = record(launch.kernelStarted);
    launch.setValue('devices', '1');
    launch.setValue('flavor', 'a100-80g');
    const kernel = await launch.startKernel();
    expect(kernel?.kernel_id).toBe('k-1');
    expect(service.callsOf('startKernel')).toEqual([['startKernel', 'fine-tuning', { devices: 1, flavor: 'a100-80g' }]]);
    expect(started).toHaveLength(1);
    expect(launch.starting).toBe(false);
  });

  it('starts a kernel of another template for a launcher item', async () => {
    const { launch, service } = model();
    await launch.startKernel({ template: 'interactive' });
    expect(service.callsOf('startKernel')).toEqual([['startKernel', 'interactive', {}]]);
  });

  it('reports a kernel that could not be placed with the server message', async () => {
    const { launch, service } = model();
    service.failures.set('startKernel', FakeService.error('no interactive kernel could be placed within 60 s', 409));
    const failures = record(launch.failed);
    await expect(launch.startKernel()).resolves.toBeNull();
    expect(failures).toEqual([{ action: 'start-kernel', message: 'no interactive kernel could be placed within 60 s' }]);
  });

  it('submits a script or a notebook as a job', async () => {
    const { launch, service } = model();
    const submitted = record(launch.submitted);
    expect(launch.canSubmitJob).toBe(false);
    launch.setPath('train.txt');
    expect(launch.pathProblem).toBe('not-runnable');
    launch.setPath('/work/train.py');
    expect(launch.canSubmitJob).toBe(true);
    await launch.submitJob();
    await launch.submitJob({ template: 'training', path: 'report.ipynb' });
    expect(service.callsOf('submitWorkload').map(c => c[1])).toEqual([
      { template: 'fine-tuning', parameters: {}, script: { path: 'work/train.py' } },
      { template: 'training', parameters: {}, notebook: { path: 'report.ipynb' } }
    ]);
    expect(submitted.map(w => w.id)).toEqual([8, 8]);
  });

  it('submits a job to run after other workloads, and not while the field is malformed', async () => {
    const { launch, service } = model();
    launch.setPath('train.py');
    launch.setAfter('12, 13:any 14:failed');
    expect(launch.afterMalformed).toBe(false);
    await launch.submitJob();
    launch.setAfter('12:soon');
    expect(launch.afterMalformed).toBe(true);
    expect(launch.canSubmitJob).toBe(false);
    await expect(launch.submitJob()).resolves.toBeNull();
    expect(service.callsOf('submitWorkload').map(c => c[1])).toEqual([
      {
        template: 'fine-tuning',
        parameters: {},
        script: { path: 'train.py' },
        after: [
          { workload: 12, condition: 'ok' },
          { workload: 13, condition: 'any' },
          { workload: 14, condition: 'failed' }
        ]
      }
    ]);
  });

  it('submits a job to run in the folder the file browser shows, and never names the interpreter', async () => {
    const { launch, service } = model();
    launch.setPath('projects/mnist/train.py');
    await launch.submitJob(); // the browser at the root: the server's default, nothing sent
    let folder = 'projects/mnist';
    launch.currentFolder = () => folder;
    await launch.submitJob();
    folder = '/projects/';
    await launch.submitJob();
    // The current notebook runs in its own folder, whatever the browser shows.
    await launch.submitJob({ template: 'training', path: 'reports/weekly.ipynb', cwd: 'reports' });
    const sent = service.callsOf('submitWorkload').map(c => c[1] as Record<string, unknown>);
    expect(sent.map(body => body.cwd)).toEqual([undefined, 'projects/mnist', 'projects', 'reports']);
    expect(sent[1]).toEqual({
      template: 'fine-tuning',
      parameters: {},
      script: { path: 'projects/mnist/train.py' },
      cwd: 'projects/mnist'
    });
    expect(sent.some(body => 'python' in body)).toBe(false);
  });

  it('cannot submit a job with a template that only runs kernels', () => {
    const service = new FakeService();
    service.templates = [build.template({ name: 'interactive', kinds: ['kernel'] })];
    const { launch } = model(service);
    launch.setPath('train.py');
    expect(launch.canSubmitJob).toBe(false);
    expect(launch.canStartKernel).toBe(true);
  });

  it('lets no preview of the previous template land after another is chosen', async () => {
    const service = new FakeService();
    const launch = new LaunchModel({ service, lang: 'en', previewDelayMs: 60_000 });
    launch.setTemplates(service.templates);
    const release = service.hold('previewWorkload');
    const old = launch.refreshPreview();
    launch.select('training');
    release();
    await old;
    expect(launch.template?.name).toBe('training');
    expect(launch.preview).toBeNull();
    launch.dispose();
  });

  it('starts over from the defaults when another template is chosen', () => {
    const { launch } = model();
    launch.setValue('devices', '2');
    launch.select('training');
    expect(launch.raw).toEqual({});
    expect(launch.preview).toBeNull();
  });
});
