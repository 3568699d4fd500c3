import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatDuration, num, stateLabel } from '../../format';
import { EvidenceSectionKey, blockersOverTime, evidenceSections, seriesSummaries } from '../../models/evidence';
import { formatFigure } from '../../models/metrics';
import type { IWorkloadEvidence } from '../../types';

/** Props of `EvidenceView`. */
export interface IEvidenceViewProps {
  evidence: IWorkloadEvidence;
  /** The chain as one HTML page, to open in a browser tab. */
  pageUrl: string;
  trans: TranslationBundle;
  onDismiss: () => void;
}

/** A time as the reader's locale writes it. */
function when(at: number | null | undefined): string {
  return typeof at === 'number' ? new Date(at * 1000).toLocaleString() : '–';
}

/** A flat object as `key=value, ...`. */
function pairs(value: Record<string, unknown> | null | undefined): string {
  const entries = Object.entries(value ?? {});
  return entries.length > 0 ? entries.map(([key, item]) => `${key}=${String(item)}`).join(', ') : '–';
}

function sectionTitle(key: EvidenceSectionKey, trans: TranslationBundle): string {
  switch (key) {
    case 'request':
      return trans.__('Request');
    case 'attempts':
      return trans.__('Attempts');
    case 'wait':
      return trans.__('Waits and blockers');
    case 'utilisation':
      return trans.__('Utilisation');
    case 'alerts':
      return trans.__('Alerts');
    case 'preemptions':
      return trans.__('Preemptions');
    case 'release':
      return trans.__('Release');
    case 'events':
      return trans.__('Events');
    case 'audit':
      return trans.__('Audit');
  }
}

function SectionBody(props: { section: EvidenceSectionKey; evidence: IWorkloadEvidence; trans: TranslationBundle }) {
  const { evidence: e, trans } = props;
  const none = <div className="jp-hetero-empty">{trans.__('none')}</div>;
  switch (props.section) {
    case 'request': {
      const r = e.request;
      return (
        <ul className="jp-hetero-evidence-lines">
          <li>{trans.__('Submitted by %1 (tenant %2) on %3', r.submitter, r.tenant, when(r.submitted_at))}</li>
          <li>{trans.__('%1 · template %2 · queue %3', r.kind, r.template, r.queue)}</li>
          <li>{trans.__('Parameters: %1', pairs(r.parameters))}</li>
          <li>{trans.__('Eligible flavors: %1', r.flavors.join(', ') || '–')}</li>
          {r.idempotency_key && <li>{trans.__('Idempotency key: %1', r.idempotency_key)}</li>}
        </ul>
      );
    }
    case 'attempts':
      return e.attempts.length === 0 ? (
        none
      ) : (
        <ul className="jp-hetero-evidence-lines">
          {e.attempts.map(a => (
            <li key={a.number} className="jp-hetero-evidence-attempt">
              <div>
                {trans.__('Attempt %1 on %2: %3', a.number, a.nodes.join(', '), a.outcome ?? trans.__('running'))}
                {a.exit_code !== null && ` · ${trans.__('exit code %1', a.exit_code)}`}
              </div>
              {a.reason && <div className="jp-hetero-workload-reason">{a.reason}</div>}
              {Object.entries(a.node_labels).map(([node, facts]) => (
                <div key={node} className="jp-hetero-evidence-node">
                  {trans.__(
                    '%1: %2, driver %3, runtime %4',
                    node,
                    facts.chip ?? facts.flavor ?? '–',
                    facts.driver ?? '–',
                    facts.runtime ?? '–'
                  )}
                  {facts.labels && Object.keys(facts.labels).length > 0 && (
                    <div className="jp-hetero-evidence-labels">{pairs(facts.labels)}</div>
                  )}
                </div>
              ))}
              {a.image && <div>{trans.__('Image: %1', a.image)}</div>}
              {a.log_tail.lines.length > 0 && (
                <pre className="jp-hetero-evidence-log">{a.log_tail.lines.join('\n')}</pre>
              )}
            </li>
          ))}
        </ul>
      );
    case 'wait': {
      const steps = blockersOverTime(e);
      return (
        <ul className="jp-hetero-evidence-lines">
          {e.wait.map(w => (
            <li key={`${w.attempt}-${w.from}`}>
              {w.waited_s !== null && w.waited_s !== undefined
                ? trans.__('Attempt %1: waited %2', w.attempt, formatDuration(w.waited_s, trans))
                : trans.__('Attempt %1: not admitted', w.attempt)}
            </li>
          ))}
          {steps.map((step, index) => (
            <li key={`step-${index}`} className="jp-hetero-blocker">
              {`${when(step.at)}: ${step.messages.join('; ')}`}
            </li>
          ))}
        </ul>
      );
    }
    case 'utilisation':
      return (
        <ul className="jp-hetero-evidence-lines">
          {e.utilisation.attempts.map((u, index) => (
            <li key={index}>
              {trans.__(
                'Attempt %1: device utilisation %2, device memory peak %3 MiB',
                String(u.attempt),
                typeof u.device_util_pct_mean === 'number' ? `${num(u.device_util_pct_mean)}%` : '–',
                typeof u.device_memory_peak_mib === 'number' ? num(u.device_memory_peak_mib) : '–'
              )}
            </li>
          ))}
          {seriesSummaries(e).map(series => (
            <li key={series.name} className="jp-hetero-evidence-series">
              {trans.__(
                '%1: %2 samples, last %3, peak %4',
                series.name,
                series.count,
                // As the Metrics view says them: a loss of 0.25 is not "0.3", 4096 bytes are "4.1 kB".
                series.last === null ? '–' : formatFigure(series.last, series.unit || null),
                series.peak === null ? '–' : formatFigure(series.peak, series.unit || null)
              )}
            </li>
          ))}
          {!e.utilisation.series_recorded && (
            <li className="jp-hetero-empty">{trans.__('Per-workload metric samples are not recorded.')}</li>
          )}
        </ul>
      );
    case 'alerts':
      return e.alerts.length === 0 ? (
        none
      ) : (
        <ul className="jp-hetero-evidence-lines">
          {e.alerts.map(a => (
            <li key={a.id}>{`${when(a.fired_at)} ${a.severity}: ${a.message}`}</li>
          ))}
        </ul>
      );
    case 'preemptions':
      return e.preemptions.length === 0 ? (
        none
      ) : (
        <ul className="jp-hetero-evidence-lines">
          {e.preemptions.map((p, index) => (
            <li key={index}>
              {p.by_workload !== null
                ? trans.__('%1: preempted by workload %2 (%3)', when(p.at), p.by_workload, p.why ?? '–')
                : trans.__('%1: preempted by platform admin %2', when(p.at), p.by_admin ?? '–')}
            </li>
          ))}
        </ul>
      );
    case 'release':
      return (
        <ul className="jp-hetero-evidence-lines">
          <li>
            {e.release.final
              ? trans.__('%1 on %2', stateLabel(e.release.state, trans), when(e.release.finished_at))
              : trans.__('%1, not final yet', stateLabel(e.release.state, trans))}
          </li>
          {e.release.reason && <li>{e.release.reason}</li>}
          <li>
            {trans.__(
              'Attempts %1: %2 failed, %3 preempted, %4 lost with their node',
              e.release.attempts,
              e.release.failures,
              e.release.preemptions,
              e.release.node_losses
            )}
          </li>
        </ul>
      );
    case 'events':
      return (
        <ol className="jp-hetero-evidence-lines">
          {e.events.map(ev => (
            <li key={ev.id}>{`${when(ev.at)} ${ev.type}${ev.reason ? `: ${ev.reason}` : ''}`}</li>
          ))}
        </ol>
      );
    case 'audit': {
      const verdict = e.audit.verification;
      return (
        <div>
          <div className={verdict.intact ? 'jp-hetero-evidence-intact' : 'jp-hetero-evidence-broken'}>
            {verdict.intact
              ? trans.__('Audit chain intact: %1 entries checked', verdict.entries)
              : trans.__('Audit chain broken at entry %1: %2', verdict.first_break ?? '–', verdict.problem ?? '')}
          </div>
          <ul className="jp-hetero-evidence-lines">
            {e.audit.entries.map(entry => (
              <li key={entry.id} title={entry.hash}>
                {`#${entry.id} ${when(entry.at)} ${entry.actor} ${entry.action} ${entry.outcome} ${entry.hash.slice(0, 12)}…`}
              </li>
            ))}
          </ul>
        </div>
      );
    }
  }
}

/** One workload's evidence chain, a collapsible block per section, from its request to its release. */
export function EvidenceView(props: IEvidenceViewProps): JSX.Element {
  const { evidence, trans } = props;
  return (
    <div className="jp-hetero-evidence" role="region" aria-label={trans.__('Evidence of workload %1', evidence.id)}>
      <div className="jp-hetero-row">
        <strong>{trans.__('Evidence of workload %1', evidence.id)}</strong>
        <a className="jp-hetero-evidence-page" href={props.pageUrl} target="_blank" rel="noopener noreferrer">
          {trans.__('Open as a page')}
        </a>
        <button
          type="button"
          className="jp-Button jp-mod-minimal jp-hetero-dismiss"
          onClick={props.onDismiss}
          aria-label={trans.__('Hide evidence of workload %1', evidence.id)}
          title={trans.__('Hide')}
        >
          ×
        </button>
      </div>
      {evidenceSections(evidence).map(section => (
        <details key={section.key} className="jp-hetero-evidence-section" data-section={section.key} open={section.open}>
          <summary>{trans.__('%1 (%2)', sectionTitle(section.key, trans), section.count)}</summary>
          <SectionBody section={section.key} evidence={evidence} trans={trans} />
        </details>
      ))}
    </div>
  );
}
