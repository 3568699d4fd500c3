import * as React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { ServicesSection } from '../../src/components';
import * as build from '../builders';
import { click, IRendered, render, trans } from '../render';

let rendered: IRendered | null = null;
afterEach(() => rendered?.unmount());

const history = new Map([
  ['/hetero/endpoints/vision/resnet/', [{ requestsPerS: 1, p95Ms: 8 }, { requestsPerS: 3, p95Ms: 12 }, { requestsPerS: 2, p95Ms: null }]]
]);

describe('ServicesSection', () => {
  it('shows each service with its endpoint, ready replicas, traffic and chart', () => {
    rendered = render(
      <ServicesSection services={[build.service()]} history={history} trans={trans} onRollBack={vi.fn()} />
    );
    const card = rendered.host.querySelector('.jp-hetero-service[data-service="resnet"]');
    expect(card?.querySelector('.jp-hetero-service-endpoint')?.textContent).toBe('/hetero/endpoints/vision/resnet/');
    expect(card?.querySelector('.jp-hetero-service-replicas')?.textContent).toBe('2 of 2 replicas ready');
    expect(card?.querySelector('.jp-hetero-service-traffic')?.textContent).toBe(
      '2 requests/s · p95 9.5 ms · errors 1%'
    );
    const chart = card?.querySelector('svg.jp-hetero-traffic-chart');
    expect(chart?.getAttribute('aria-label')).toBe('Requests per second and p95 latency, last 3 refreshes');
    expect(chart?.querySelector('.jp-hetero-traffic-rps')?.getAttribute('d')).toMatch(/^M0\.0,\d/);
    expect(chart?.querySelector('.jp-hetero-traffic-p95')?.getAttribute('d')?.split('L')).toHaveLength(2);
    expect(card?.querySelector('.jp-hetero-service-rollout')?.getAttribute('data-state')).toBe('stable');
    expect(card?.querySelector('.jp-hetero-service-devices')?.textContent).toBe(
      'Device utilisation: not measured on these nodes'
    );
  });

  it('shows its devices use where it is measured', () => {
    const service = build.service({ device_utilisation: { device_util_pct: 37.5, device_memory_used_mib: 2048 } });
    rendered = render(<ServicesSection services={[service]} history={history} trans={trans} onRollBack={vi.fn()} />);
    expect(rendered.host.querySelector('.jp-hetero-service-devices')?.textContent).toBe('Device utilisation: 37.5%');
  });

  it('shows a canary under trial with both revisions figures, and rolls it back', () => {
    const onRollBack = vi.fn();
    const canary = build.traffic({ requests: 30, error_rate: 0.5 });
    const stable = build.traffic({ requests: 90, error_rate: 0 });
    const spec = { command: ['python', 'serve.py'], code: null, env: { MODEL: 'v2' }, parameters: {}, readiness_path: '/health' };
    const service = build.service({
      rollout: {
        revision: 2, spec, state: 'canary', replicas: 1, traffic: 0.2, window_s: 60, min_requests: 20,
        started_at: 0, ready_at: 1, canary, stable
      }
    });
    rendered = render(<ServicesSection services={[service]} history={history} trans={trans} onRollBack={onRollBack} />);
    const rollout = rendered.host.querySelector('.jp-hetero-service-rollout');
    expect(rollout?.getAttribute('data-state')).toBe('canary');
    expect(rollout?.textContent).toContain('Canary: revision 2 takes 20% of requests');
    expect(rollout?.textContent).toContain('canary 30 requests, 50% errors; stable 90 requests, 0% errors');
    click(rendered.host.querySelector('.jp-hetero-action-rollback'));
    expect(onRollBack).toHaveBeenCalledWith(service);
  });

  it('says how the last rollout ended, with the targets a rolled-back canary missed', () => {
    const spec = { command: ['python', 'serve.py'], code: null, env: {}, parameters: {}, readiness_path: '/health' };
    const service = build.service({
      revisions: [
        { revision: 1, spec, outcome: 'created', at: 0, by: 'alice' },
        { revision: 2, spec, outcome: 'rolled-back', at: 5, by: 'alice', violations: ['error_rate 1 over its bound 0.05'] }
      ]
    });
    rendered = render(<ServicesSection services={[service]} history={new Map()} trans={trans} onRollBack={vi.fn()} />);
    expect(rendered.host.querySelector('.jp-hetero-service-rollout')?.textContent).toBe(
      'Revision 2 was rolled back: error_rate 1 over its bound 0.05'
    );
    expect(rendered.host.textContent).toContain('The chart fills as the panel refreshes.');
  });

  it('tells how to start a service when there is none', () => {
    rendered = render(<ServicesSection services={[]} history={new Map()} trans={trans} onRollBack={vi.fn()} />);
    expect(rendered.host.textContent).toContain(
      'No online service yet: start one with %%hetero_serve or jupyter hetero services create.'
    );
  });
});
