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
    after: '',
    afterMalformed: false,
    canStartKernel: true,
    canSubmitJob: false,
    starting: false,
    submitting: false,
    lang: 'en',
    trans,
    onSelect: vi.fn(),
    onValue: vi.fn(),
    onPath: vi.fn(),
    onAfter: vi.fn(),
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
    const image = a100?.querySelector('.jp-hetero-flavor-image');
    expect(image?.textContent).toBe('image pytorch:24.10-py3');
    expect(image?.getAttribute('title')).toBe('nvcr.io/nvidia/pytorch:24.10-py3');
    const h100 = rendered.host.querySelector('.jp-hetero-flavor[data-flavor="h100-80g"]');
    expect(h100?.classList.contains('jp-hetero-mod-unschedulable')).toBe(true);
    expect(h100?.querySelector<HTMLInputElement>('input[type=radio]')?.disabled).toBe(true);
    expect(h100?.querySelector('.jp-hetero-flavor-reason')?.textContent).toBe(
      'capacity: no ready node belongs to flavor h100-80g'
    );
    click(a100?.querySelector('input[type=radio]') ?? null);
    expect(p.onValue).toHaveBeenCalledWith('flavor', 'a100-80g');
  });

  it('makes the flavors a radio group named by its heading when the template lets the user pick one', () => {
    rendered = render(<LaunchSection {...props({ values: { flavor: 'a100-80g' } })} />);
    const group = rendered.host.querySelector('.jp-hetero-flavor-list');
    expect(group?.tagName).toBe('DIV');
    expect(group?.getAttribute('role')).toBe('radiogroup');
    const name = document.getElementById(group?.getAttribute('aria-labelledby') ?? '');
    expect(name?.textContent).toBe('Eligible flavors');
    // Options of a radio group are not list items, and no row claims a state it cannot have.
    expect(group?.querySelectorAll('li')).toHaveLength(0);
    const rows = [...(group?.querySelectorAll('.jp-hetero-flavor') ?? [])];
    expect(rows.map(row => [row.tagName, row.getAttribute('data-flavor')])).toEqual([
      ['DIV', ''],
      ['DIV', 'a100-80g'],
      ['DIV', 'h100-80g']
    ]);
    expect(rows.filter(row => row.hasAttribute('aria-disabled'))).toEqual([]);
    const radios = [...(group?.querySelectorAll<HTMLInputElement>('input[type=radio]') ?? [])];
    expect(radios.map(radio => [radio.value, radio.checked, radio.disabled])).toEqual([
      ['', false, false],
      ['a100-80g', true, false],
      ['h100-80g', false, true]
    ]);
    expect(new Set(radios.map(radio => radio.name)).size).toBe(1);
    expect(radios[0].name).not.toBe('');
    // Each radio is named by its row's label; the reason a flavor cannot be chosen describes it.
    expect(radios[2].closest('label')?.textContent).toContain('H100/H200 80G+');
    const reason = document.getElementById(radios[2].getAttribute('aria-describedby') ?? '');
    expect(reason?.textContent).toBe('capacity: no ready node belongs to flavor h100-80g');
    expect(reason?.classList.contains('jp-hetero-flavor-reason')).toBe(true);
    // The locators of the browser tests still find their rows and radio buttons.
    const first = rendered.host.querySelector('.jp-hetero-flavor[data-flavor]:not([data-flavor=""])');
    expect(first?.getAttribute('data-flavor')).toBe('a100-80g');
    expect(rendered.host.querySelector('.jp-hetero-flavor[data-flavor="a100-80g"] input[type=radio]')).not.toBeNull();
    const h100 = rendered.host.querySelector('.jp-hetero-flavor[data-flavor="h100-80g"]');
    expect(h100?.getAttribute('data-starts-now')).toBe('false');
    expect(h100?.classList.contains('jp-hetero-mod-unschedulable')).toBe(true);
  });

  it('lists the flavors as a plain list, without radio buttons, when the template has no flavor parameter', () => {
    const fixed = build.template({ parameters: build.template().parameters.filter(p => p.name !== 'flavor') });
    rendered = render(<LaunchSection {...props({ templates: [fixed], template: fixed })} />);
    const list = rendered.host.querySelector('.jp-hetero-flavor-list');
    expect(list?.tagName).toBe('UL');
    expect(list?.hasAttribute('role')).toBe(false);
    expect(document.getElementById(list?.getAttribute('aria-labelledby') ?? '')?.textContent).toBe('Eligible flavors');
    const rows = [...(list?.querySelectorAll('.jp-hetero-flavor') ?? [])];
    expect(rows.map(row => [row.tagName, row.getAttribute('data-flavor')])).toEqual([
      ['LI', 'a100-80g'],
      ['LI', 'h100-80g']
    ]);
    expect(list?.querySelector('input')).toBeNull();
    expect(rows[1].classList.contains('jp-hetero-mod-unschedulable')).toBe(true);
    expect(rows[1].querySelector('.jp-hetero-flavor-reason')?.textContent).toBe(
      'capacity: no ready node belongs to flavor h100-80g'
    );
  });

  it('says whether the template runs kernels and jobs from what it offers, interactive included', () => {
    const interactiveOnly = build.template({ kinds: ['job'], interactive: true });
    rendered = render(<LaunchSection {...props({ template: interactiveOnly })} />);
    expect(rendered.host.querySelector('.jp-hetero-start-kernel')?.getAttribute('title')).toBe(
      'Start a kernel of this template and open a notebook on it'
    );
    expect(rendered.host.querySelector('.jp-hetero-submit-job')?.getAttribute('title')).toBe(
      'Submit the script or notebook as a job of this template'
    );
    rendered.unmount();
    const kernelsOnly = build.template({ kinds: ['kernel'], interactive: false });
    rendered = render(<LaunchSection {...props({ template: kernelsOnly })} />);
    expect(rendered.host.querySelector('.jp-hetero-submit-job')?.getAttribute('title')).toBe('This template does not run jobs');
    rendered.unmount();
    const batch = build.template({ kinds: ['job'], interactive: false });
    rendered = render(<LaunchSection {...props({ template: batch })} />);
    expect(rendered.host.querySelector('.jp-hetero-start-kernel')?.getAttribute('title')).toBe(
      'This template does not run kernels'
    );
  });

  it('names "Use selected" with its visible label in its accessible name', () => {
    rendered = render(<LaunchSection {...props()} />);
    const use = rendered.host.querySelector('.jp-hetero-use-selection');
    expect(use?.textContent).toBe('Use selected');
    expect(use?.getAttribute('aria-label')).toBe('Use selected file from the file browser');
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

  it('takes the workloads a job runs after, and says what is wrong with them', () => {
    const p = props();
    rendered = render(<LaunchSection {...p} />);
    const input = rendered.host.querySelector('#jp-hetero-run-after');
    expect(rendered.host.querySelector('label[for="jp-hetero-run-after"]')?.textContent).toBe('Run after');
    expect(input?.getAttribute('aria-invalid')).toBe('false');
    change(input, '12, 13:any');
    expect(p.onAfter).toHaveBeenCalledWith('12, 13:any');
    rendered.unmount();
    rendered = render(<LaunchSection {...props({ after: '12:soon', afterMalformed: true })} />);
    expect(rendered.host.querySelector('#jp-hetero-run-after')?.getAttribute('aria-invalid')).toBe('true');
    expect(rendered.host.querySelector('.jp-hetero-run-after [role="alert"]')?.textContent).toBe(
      'Give workload ids, each as ID, ID:ok, ID:any or ID:failed.'
    );
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
