import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { localized } from '../../format';
import type { ITenantSummary, Lang } from '../../types';
import { QuotaList } from '../common/QuotaList';

/** Props of `TenantCard`. */
export interface ITenantCardProps {
  tenant: ITenantSummary;
  lang: Lang;
  trans: TranslationBundle;
}

/** One tenant: members, admins, cost centre, and quota with use per flavor. */
export function TenantCard(props: ITenantCardProps): JSX.Element {
  const { tenant, trans } = props;
  const titleId = `jp-hetero-tenant-${tenant.tenant}`;
  const listOrNone = (names: readonly string[] | undefined): string =>
    names && names.length > 0 ? names.join(', ') : trans.__('none');
  return (
    <article className="jp-hetero-card jp-hetero-tenant" data-tenant={tenant.tenant} aria-labelledby={titleId}>
      <header className="jp-hetero-card-header">
        <h4 className="jp-hetero-card-title" id={titleId}>
          {localized(tenant.display, props.lang, tenant.tenant)}
        </h4>
        <span className="jp-hetero-badge">{tenant.tenant}</span>
      </header>
      <dl className="jp-hetero-facts">
        <dt>{trans.__('Users')}</dt>
        <dd>{listOrNone(tenant.users)}</dd>
        <dt>{trans.__('Groups')}</dt>
        <dd>{listOrNone(tenant.groups)}</dd>
        <dt>{trans.__('Admins')}</dt>
        <dd>{listOrNone(tenant.admins)}</dd>
        <dt>{trans.__('Cost centre')}</dt>
        <dd>{tenant.cost_centre ?? trans.__('none')}</dd>
      </dl>
      <h5 className="jp-hetero-subtitle">{trans.__('Quota and use')}</h5>
      <QuotaList quota={tenant.quota} trans={trans} />
    </article>
  );
}
