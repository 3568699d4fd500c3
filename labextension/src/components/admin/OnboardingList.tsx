import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IOnboarding } from '../../types';

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
            </summary>
            <ol>
              {entry.steps.map(step => (
                <li key={step.name} data-ok={step.ok}>
                  {step.ok ? '✓' : '✗'} {step.name}: {step.evidence}
                </li>
              ))}
            </ol>
          </details>
        </li>
      ))}
    </ul>
  );
}
