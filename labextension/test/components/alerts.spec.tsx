import * as React from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import { AdminSection } from '../../src/components';
import { AlertList, IAlertsOpenStore, sessionAlertsOpen } from '../../src/components/common/AlertList';
import * as build from '../builders';
import { click, IRendered, render, trans } from '../render';

let rendered: IRendered | null = null;
afterEach(() => {
  rendered?.unmount();
  rendered = null;
  window.sessionStorage.clear();
});

function memory(open = false): IAlertsOpenStore & { saved: boolean[] } {
  const saved: boolean[] = [];
  return { saved, get: () => open, set: value => saved.push(value) };
}

const alerts = [
  build.alert(),
  build.alert({ id: 2, rule: 'node-lost', severity: 'critical', message: 'node gpu-1 is lost' }),
  build.alert({ id: 3, rule: 'quota-nearly-exhausted', severity: 'info', message: 'tenant vision uses 95%' })
];

describe('AlertList', () => {
  it('is one closed line with the count and the worst severity, however many fire', () => {
    rendered = render(<AlertList alerts={alerts} messageOf={alert => alert.message} trans={trans} store={memory()} />);
    const toggle = rendered.host.querySelector('.jp-hetero-alerts-toggle');
    expect(toggle?.textContent).toBe('3 alerts ▸');
    expect(toggle?.getAttribute('aria-expanded')).toBe('false');
    expect(rendered.host.querySelector('.jp-hetero-alerts')?.getAttribute('data-severity')).toBe('critical');
    expect(rendered.host.querySelectorAll('.jp-hetero-alert')).toHaveLength(0);
  });

  it('opens on click into each alert, and remembers open and closed', () => {
    const store = memory();
    rendered = render(<AlertList alerts={alerts} messageOf={alert => alert.message} trans={trans} store={store} />);
    click(rendered.host.querySelector('.jp-hetero-alerts-toggle'));
    const shown = [...rendered.host.querySelectorAll('.jp-hetero-alert')];
    expect(shown.map(li => [li.getAttribute('data-severity'), li.getAttribute('role'), li.textContent])).toEqual([
      ['warning', 'alert', 'Warning queue batch: workload 7 has waited 90 s, past its max wait of 60 s'],
      ['critical', 'alert', 'Critical node gpu-1 is lost'],
      ['info', 'status', 'Info tenant vision uses 95%']
    ]);
    expect(rendered.host.querySelector('.jp-hetero-alerts-toggle')?.textContent).toBe('3 alerts ▾');
    click(rendered.host.querySelector('.jp-hetero-alerts-toggle'));
    expect(rendered.host.querySelectorAll('.jp-hetero-alert')).toHaveLength(0);
    expect(store.saved).toEqual([true, false]);
  });

  it('starts open where the session left it open, and says one alert in the singular', () => {
    rendered = render(
      <AlertList alerts={alerts.slice(0, 1)} messageOf={alert => alert.message} trans={trans} store={memory(true)} />
    );
    expect(rendered.host.querySelector('.jp-hetero-alerts-toggle')?.textContent).toBe('1 alert ▾');
    expect(rendered.host.querySelectorAll('.jp-hetero-alert')).toHaveLength(1);
  });

  it('keeps open or closed in the browser session by default', () => {
    expect(sessionAlertsOpen.get()).toBe(false);
    rendered = render(<AlertList alerts={alerts} messageOf={alert => alert.message} trans={trans} />);
    click(rendered.host.querySelector('.jp-hetero-alerts-toggle'));
    expect(sessionAlertsOpen.get()).toBe(true);
    rendered.unmount();
    rendered = render(<AlertList alerts={alerts} messageOf={alert => alert.message} trans={trans} />);
    expect(rendered.host.querySelectorAll('.jp-hetero-alert')).toHaveLength(3);
  });

  it('shows nothing when none fires', () => {
    rendered = render(<AlertList alerts={[]} messageOf={alert => alert.message} trans={trans} store={memory(true)} />);
    expect(rendered.host.querySelector('.jp-hetero-alerts')).toBeNull();
  });
});

describe('OnboardingList', () => {
  it('marks a skipped step apart from a failed one, and counts the skipped steps of an accepted checklist', () => {
    const skipped = build.onboarding({
      kind: 'framework',
      name: 'training/amd',
      state: 'accepted',
      failed_step: null,
      steps: [
        { name: 'variant', ok: true, status: 'passed', evidence: 'image rocm/pytorch', at: 0 },
        { name: 'node', ok: true, status: 'skipped', evidence: 'skipped: needs a ready amd node: the inventory has none', at: 1 },
        { name: 'imports', ok: true, status: 'skipped', evidence: 'skipped: needs a ready amd node to import on', at: 2 }
      ]
    });
    rendered = render(
      <AdminSection tenants={[]} role="platform-admin" lang="en" trans={trans} onboarding={[skipped, build.onboarding()]} />
    );
    const [framework, node] = [...rendered.host.querySelectorAll('.jp-hetero-onboarding > li')];
    expect(framework.querySelector('summary')?.textContent).toBe('framework training/amd: accepted (2 steps skipped)');
    expect([...framework.querySelectorAll('ol > li')].map(li => [li.getAttribute('data-status'), li.textContent])).toEqual([
      ['passed', '✓ variant: image rocm/pytorch'],
      ['skipped', '– node: skipped: needs a ready amd node: the inventory has none'],
      ['skipped', '– imports: skipped: needs a ready amd node to import on']
    ]);
    expect(framework.querySelector('[data-status="skipped"] span')?.getAttribute('title')).toBe('skipped: cannot run here');
    expect(node.querySelector('summary')?.textContent).toBe('node gpu-t4-0: rejected (driver)');
    expect(node.querySelector('[data-status="failed"]')?.textContent).toContain('✗ driver: ');
  });
});
