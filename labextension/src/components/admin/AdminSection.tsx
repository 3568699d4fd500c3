import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IOnboarding, ITenantSummary, Lang, Role } from '../../types';
import { Section } from '../common/Section';
import { OnboardingList } from './OnboardingList';
import { TenantCard } from './TenantCard';

/** Props of `AdminSection`. */
export interface IAdminSectionProps {
  tenants: readonly ITenantSummary[];
  role: Role;
  lang: Lang;
  trans: TranslationBundle;
  /** Where the acceptance report opens (platform admins only). */
  reportUrl?: string;
  /** Nodes' and tenants' onboarding checklists (platform admins only). */
  onboarding?: readonly IOnboarding[];
}

/** Tenants with quota and use, for tenant-admins (their own) and platform-admins (all). */
export function AdminSection(props: IAdminSectionProps): JSX.Element {
  const { trans } = props;
  return (
    <Section id="admin" title={trans.__('Admin')}>
      <div className="jp-hetero-hint">
        {props.role === 'platform-admin'
          ? trans.__('You are a platform admin: every tenant is shown.')
          : trans.__('You are a tenant admin: your tenant is shown.')}
      </div>
      {props.role === 'platform-admin' && props.reportUrl && (
        <p className="jp-hetero-report-link">
          <a href={props.reportUrl} target="_blank" rel="noopener noreferrer">
            {trans.__('Acceptance report (last 30 days)')}
          </a>
        </p>
      )}
      {props.role === 'platform-admin' && (
        <>
          <h4 className="jp-hetero-subtitle">{trans.__('Onboarding')}</h4>
          <OnboardingList onboarding={props.onboarding ?? []} trans={trans} />
        </>
      )}
      <h4 className="jp-hetero-subtitle">{trans.__('Tenants')}</h4>
      {props.tenants.length === 0 && <div className="jp-hetero-empty">{trans.__('No tenants.')}</div>}
      {props.tenants.map(tenant => (
        <TenantCard key={tenant.tenant} tenant={tenant} lang={props.lang} trans={trans} />
      ))}
    </Section>
  );
}
