import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { num } from '../../format';
import type { IQuotaUse } from '../../types';
import { CpuMeter, MemoryMeter, Meter } from './Meter';

/** Props of `QuotaList`. */
export interface IQuotaListProps {
  quota: readonly IQuotaUse[];
  trans: TranslationBundle;
}

/** Whether a flavor's quota says anything: some nominal share or some use. */
function relevant(use: IQuotaUse): boolean {
  const { nominal, used } = use;
  return (
    nominal.device_milli + nominal.cpu_milli + nominal.memory_mib > 0 ||
    used.device_milli + used.cpu_milli + used.memory_mib > 0
  );
}

/** Quota use per flavor: devices (for accelerator flavors), CPU and memory, used against nominal. */
export function QuotaList(props: IQuotaListProps): JSX.Element {
  const { trans } = props;
  const rows = props.quota.filter(relevant);
  if (rows.length === 0) {
    return <div className="jp-hetero-empty">{trans.__('No quota.')}</div>;
  }
  return (
    <ul className="jp-hetero-quota">
      {rows.map(({ flavor, nominal, used }) => (
        <li key={flavor} className="jp-hetero-quota-flavor" data-flavor={flavor}>
          <span className="jp-hetero-quota-name">{flavor}</span>
          {(nominal.device_milli > 0 || used.device_milli > 0) && (
            <Meter
              label={trans.__('Devices')}
              used={used.device_milli}
              total={nominal.device_milli}
              text={`${num(used.device_milli / 1000, 2)} / ${num(nominal.device_milli / 1000, 2)}`}
              trans={trans}
            />
          )}
          <CpuMeter used={used.cpu_milli} total={nominal.cpu_milli} trans={trans} />
          <MemoryMeter used={used.memory_mib} total={nominal.memory_mib} trans={trans} />
        </li>
      ))}
    </ul>
  );
}
