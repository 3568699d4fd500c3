import * as React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { ILaunchSectionProps, LaunchSection } from '../../src/components';
import * as build from '../builders';
import { change, click, IRendered, render, trans } from '../render';

let rendered: IRendered | null = null;
afterEach(() => rendered?.unmount());

function props(overrides: Partial<ILaunchSectionProps> = {}): ILaunchSectionProps {
  const templates = [
    build.template(),
    build.template({ name: 'training', task_type: 'training', display: { en: 'Training', zh: '模型训练' }, kinds: ['job'] })
  ];
  return {
    templates,
    template: templates[0],
    values: {},
    problems: {},
    preview: build.preview(),
    previewError: null,
    path: '',
    pathProblem: 'empty',
    canStartKernel: true,
    canSubmitJob: false,
    starting: false,
    submitting: false,
    lang: 'en',
    trans,
    onSelect: vi.fn(),
    onValue: vi.fn(),
    onPath: vi.fn(),
    onUseSelection: vi.fn(),
    onStartKernel: vi.fn(),
    onSubmitJob: vi.fn(),
    ...overrides
  };
}

describe('LaunchSection', () => {
  it('groups templates by task type and reports the choice', () => {
    const p = props();
    rendered = render(<LaunchSection {...p} />);
    const groups = [...rendered.host.querySelectorAll('optgroup')].map(g => g.label);
    expect(groups).toEqual(['Fine-tuning', 'Training']);
    change(rendered.host.querySelector('.jp-hetero-template-picker select'), 'training');
    expect(p.onSelect).toHaveBeenCalledWith('training');
  });

  it('shows the description and default request in the UI language', () => {
    rendered = render(<LaunchSection {...props({ lang: 'zh' })} />);
    expect(rendered.host.querySelector('.jp-hetero-description')?.textContent).toBe('对预训练模型做微调。');
    expect(rendered.host.querySelector('.jp-hetero-default-request')?.textContent).toBe(
      '1× device ≥ 40 GiB · 8 CPU · 64 GiB memory'
    );
  });

  it('lists flavors with free capacity and ETA, greying out unschedulable ones with the reason', () => {
    const p = props();
    rendered = render(<LaunchSection {...p} />);
    const a100 = rendered.host.querySelector('.jp-hetero-flavor[data-flavor="a100-80g"]');
    expect(a100?.textContent).toContain('1 of 2 devices free');
    expect(a100?.textContent).toContain('starts now');
    const h100 = rendered.host.querySelector('.jp-hetero-flavor[data-flavor="h100-80g"]');
    expect(h100?.classList.contains('jp-hetero-mod-unschedulable')).toBe(true);
    expect(h100?.getAttribute('aria-disabled')).toBe('true');
    expect(h100?.querySelector('input')?.disabled).toBe(true);
    expect(h100?.querySelector('.jp-hetero-flavor-reason')?.textContent).toBe(
      'capacity: no admitted node belongs to flavor h100-80g'
    );
    click(a100?.querySelector('input') ?? null);
    expect(p.onValue).toHaveBeenCalledWith('flavor', 'a100-80g');
  });

  it('shows bounded advanced parameters and problems with what was typed', () => {
    const p = props({ values: { devices: '9' }, problems: { devices: 'above-max' } });
    rendered = render(<LaunchSection {...p} />);
    const field = rendered.host.querySelector('[data-parameter="devices"]');
    const input = field?.querySelector('input');
    expect(input?.getAttribute('min')).toBe('1');
    expect(input?.getAttribute('max')).toBe('8');
    expect(input?.getAttribute('aria-invalid')).toBe('true');
    expect(field?.querySelector('[role="alert"]')?.textContent).toBe('At most 8.');
    expect(rendered.host.querySelector('[data-parameter="flavor"]')).toBeNull();
    const memory = rendered.host.querySelector('[data-parameter="memory"] input');
    expect(memory?.getAttribute('placeholder')).toBe('64 GiB');
    change(memory, '128Gi');
    expect(p.onValue).toHaveBeenCalledWith('memory', '128Gi');
  });

  it('starts a kernel and submits a job through its buttons, when allowed', () => {
    const p = props({ canSubmitJob: true, path: 'train.py', pathProblem: null });
    rendered = render(<LaunchSection {...p} />);
    click(rendered.host.querySelector('.jp-hetero-start-kernel'));
    click(rendered.host.querySelector('.jp-hetero-submit-job'));
    click(rendered.host.querySelector('.jp-hetero-use-selection'));
    expect(p.onStartKernel).toHaveBeenCalledTimes(1);
    expect(p.onSubmitJob).toHaveBeenCalledTimes(1);
    expect(p.onUseSelection).toHaveBeenCalledTimes(1);
  });

  it('offers a file dialog only when the application has one', () => {
    rendered = render(<LaunchSection {...props()} />);
    expect(rendered.host.querySelector('.jp-hetero-browse')).toBeNull();
    rendered.unmount();
    const onBrowse = vi.fn();
    rendered = render(<LaunchSection {...props({ onBrowse })} />);
    click(rendered.host.querySelector('.jp-hetero-browse'));
    expect(onBrowse).toHaveBeenCalledTimes(1);
  });

  it('disables what cannot be done and says why', () => {
    rendered = render(<LaunchSection {...props({ canStartKernel: false, path: 'x.csv', pathProblem: 'not-runnable' })} />);
    expect(rendered.host.querySelector<HTMLButtonElement>('.jp-hetero-start-kernel')?.disabled).toBe(true);
    expect(rendered.host.querySelector<HTMLButtonElement>('.jp-hetero-submit-job')?.disabled).toBe(true);
    expect(rendered.host.querySelector('.jp-hetero-job-path [role="alert"]')?.textContent).toBe(
      'Choose a .py script or an .ipynb notebook.'
    );
  });

  it('shows the preview error from the server instead of flavors', () => {
    rendered = render(<LaunchSection {...props({ preview: null, previewError: 'parameters.cpu: 99 is outside' })} />);
    expect(rendered.host.querySelector('.jp-hetero-flavors [role="alert"]')?.textContent).toBe(
      'parameters.cpu: 99 is outside'
    );
  });
});
