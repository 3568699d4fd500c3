import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IOnboarding } from '../../types';

type IOnboardingStep = IOnboarding['steps'][number];

// A skipped step is no failure: it could not run here, and its evidence says what it needs.
const MARKS: Record<IOnboardingStep['status'], string> = { passed: '✓', failed: '✗', skipped: '–' };

/** Props of `OnboardingList`. */
export interface IOnboardingListProps {
  onboarding: readonly IOnboarding[];
  trans: TranslationBundle;
}

/** Each node's and tenant's onboarding: its state, the step it failed, and every step's evidence on demand. */
export function OnboardingList(props: IOnboardingListProps): JSX.Element {
  const { onboarding, trans } = props;
  const states: Record<IOnboarding['state'], string> = {
    requested: trans.__('requested'),
    verifying: trans.__('verifying'),
    accepted: trans.__('accepted'),
    rejected: trans.__('rejected')
  };
  const statuses: Record<IOnboardingStep['status'], string> = {
    passed: trans.__('passed'),
    failed: trans.__('failed'),
    skipped: trans.__('skipped: cannot run here')
  };
  if (onboarding.length === 0) {
    return <div className="jp-hetero-empty">{trans.__('No onboarding yet: nodes take work as they are seen.')}</div>;
  }
  return (
    <ul className="jp-hetero-onboarding">
      {onboarding.map(entry => (
        <li key={`${entry.kind}/${entry.name}`} data-kind={entry.kind} data-name={entry.name} data-state={entry.state}>
          <details>
            <summary>
              {entry.kind} <strong>{entry.name}</strong>: {states[entry.state]}
              {entry.failed_step ? ` (${entry.failed_step})` : ''}
              {skippedOf(entry) > 0 ? ' ' + trans._n('(%1 step skipped)', '(%1 steps skipped)', skippedOf(entry), skippedOf(entry)) : ''}
            </summary>
            <ol>
              {entry.steps.map(step => (
                <li key={step.name} data-ok={step.ok} data-status={step.status}>
                  <span title={statuses[step.status]} aria-label={statuses[step.status]}>
                    {MARKS[step.status]}
                  </span>{' '}
                  {step.name}: {step.evidence}
                </li>
              ))}
            </ol>
          </details>
        </li>
      ))}
    </ul>
  );
}

function skippedOf(entry: IOnboarding): number {
  return entry.steps.filter(step => step.status === 'skipped').length;
}
