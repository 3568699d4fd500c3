import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatCpu, formatLinkDomains, formatMemory, formatNetwork, nodeStateLabel, num } from '../../format';
import type { INode } from '../../types';
import { CpuMeter, MemoryMeter, Meter } from '../common/Meter';

/** Props of `NodeCard`. */
export interface INodeCardProps {
  node: INode;
  trans: TranslationBundle;
}

/** What the node uses now, as measured; says so where it cannot be measured. */
function Utilisation(props: INodeCardProps): JSX.Element {
  const { node, trans } = props;
  const used = node.utilisation;
  return (
    <div className="jp-hetero-node-utilisation">
      <div className="jp-hetero-meter-caption">{trans.__('In use now')}</div>
      {used ? (
        <>
          <Meter label={trans.__('CPU')} used={used.cpu_pct} total={100} text={`${num(used.cpu_pct)}%`} trans={trans} />
          <MemoryMeter used={used.memory_used_mib} total={node.memory_mib} trans={trans} />
          {used.device_util_pct !== undefined && (
            <Meter
              label={trans.__('Device utilisation')}
              used={used.device_util_pct}
              total={100}
              text={`${num(used.device_util_pct)}%`}
              trans={trans}
            />
          )}
          {used.device_memory_used_mib !== undefined && node.accelerator && (
            <MemoryMeter
              label={trans.__('Device memory')}
              used={used.device_memory_used_mib}
              total={node.accelerator.count * node.accelerator.memory_mib}
              trans={trans}
            />
          )}
        </>
      ) : (
        <div className="jp-hetero-hint">
          {node.emulated ? trans.__('Not measured: an emulated node uses nothing real.') : trans.__('Not measured.')}
        </div>
      )}
    </div>
  );
}

/** Where the node comes from: this machine, an emulated declaration, or the Kubernetes cluster. */
function SourceBadge(props: INodeCardProps): JSX.Element {
  const { node, trans } = props;
  if (node.emulated) {
    return (
      <span
        className="jp-hetero-badge jp-hetero-mod-emulated"
        title={trans.__('Emulated node: work placed here runs on this machine')}
      >
        {trans.__('emulated')}
      </span>
    );
  }
  if (node.source === 'kubernetes') {
    return (
      <span className="jp-hetero-badge jp-hetero-mod-cluster" title={trans.__('A node of the Kubernetes cluster')}>
        {trans.__('cluster node')}
      </span>
    );
  }
  return <span className="jp-hetero-badge jp-hetero-mod-real">{trans.__('this machine')}</span>;
}

/** Whether pods this platform did not place hold any of the node. */
function heldByOthers(node: INode): boolean {
  const held = node.held_by_others;
  return !!held && (held.devices > 0 || held.cpu_milli > 0 || held.memory_mib > 0);
}

/** One node: flavor, capability, state, what admitted work holds, what it uses, and whether it is emulated. */
export function NodeCard(props: INodeCardProps): JSX.Element {
  const { node, trans } = props;
  const accelerator = node.accelerator;
  const allocated = node.allocated;
  const titleId = `jp-hetero-node-${node.name}`;
  const frameworks = [...(accelerator?.frameworks ?? []), ...(node.frameworks ?? [])];
  const unhealthy = (accelerator?.devices ?? []).filter(device => device.health);
  return (
    <article
      className={'jp-hetero-card jp-hetero-node' + (node.emulated ? ' jp-hetero-mod-emulated' : '')}
      data-node={node.name}
      data-state={node.state}
      aria-labelledby={titleId}
    >
      <header className="jp-hetero-card-header">
        <h4 className="jp-hetero-card-title" id={titleId}>
          {node.name}
        </h4>
        <SourceBadge node={node} trans={trans} />
        <span className={`jp-hetero-badge jp-hetero-node-state jp-hetero-mod-${node.state}`}>
          {nodeStateLabel(node.state, trans)}
        </span>
      </header>
      <dl className="jp-hetero-facts">
        <dt>{trans.__('Flavor')}</dt>
        <dd className="jp-hetero-node-flavor">{node.flavor ?? trans.__('none')}</dd>
        {accelerator && (
          <>
            <dt>{trans.__('Accelerator')}</dt>
            <dd className="jp-hetero-node-accelerator">
              {trans.__('%1× %2, %3 each', accelerator.count, accelerator.model, formatMemory(accelerator.memory_mib))}
            </dd>
            <dt>{trans.__('Driver / runtime')}</dt>
            <dd>
              {accelerator.driver_version ?? trans.__('unknown')} / {accelerator.runtime ?? trans.__('unknown')}
            </dd>
            {accelerator.firmware_version && (
              <>
                <dt>{trans.__('Firmware')}</dt>
                <dd>{accelerator.firmware_version}</dd>
              </>
            )}
            {accelerator.interconnect && (
              <>
                <dt>{trans.__('Interconnect')}</dt>
                <dd className="jp-hetero-node-interconnect">
                  {[accelerator.interconnect, ...formatLinkDomains(accelerator.devices)].join(' · ')}
                </dd>
              </>
            )}
            {unhealthy.length > 0 && (
              <>
                <dt>{trans.__('Device health')}</dt>
                <dd className="jp-hetero-node-health">
                  {unhealthy.map(device => trans.__('device %1: %2', device.index, device.health ?? '')).join('; ')}
                </dd>
              </>
            )}
            {accelerator.inference_engines.length > 0 && (
              <>
                <dt>{trans.__('Inference engines')}</dt>
                <dd>{accelerator.inference_engines.join(', ')}</dd>
              </>
            )}
          </>
        )}
        <dt>{trans.__('Network')}</dt>
        <dd className="jp-hetero-node-network">{formatNetwork(node.network, trans)}</dd>
        <dt>{trans.__('CPU / memory')}</dt>
        <dd>
          {trans.__('%1 cores', formatCpu(node.cpu_milli))} / {formatMemory(node.memory_mib)}
          {node.arch ? ` · ${node.arch}` : ''}
        </dd>
        {heldByOthers(node) && (
          <>
            <dt>{trans.__('Held by other pods')}</dt>
            <dd className="jp-hetero-node-held">
              {trans.__(
                '%1 devices, %2 cores, %3',
                node.held_by_others.devices,
                formatCpu(node.held_by_others.cpu_milli),
                formatMemory(node.held_by_others.memory_mib)
              )}
            </dd>
          </>
        )}
        {frameworks.length > 0 && (
          <>
            <dt>{trans.__('Frameworks')}</dt>
            <dd>{[...new Set(frameworks)].join(', ')}</dd>
          </>
        )}
      </dl>
      {allocated && (
        <div className="jp-hetero-node-allocated">
          <div className="jp-hetero-meter-caption">{trans.__('Allocated')}</div>
          {accelerator && accelerator.count > 0 && (
            <Meter
              label={trans.__('Devices')}
              used={allocated.device_milli}
              total={accelerator.count * 1000}
              text={`${num(allocated.device_milli / 1000, 2)} / ${accelerator.count}`}
              trans={trans}
            />
          )}
          <CpuMeter used={allocated.cpu_milli} total={node.cpu_milli} trans={trans} />
        </div>
      )}
      <Utilisation node={node} trans={trans} />
      {(node.notes ?? []).length > 0 && (
        <ul className="jp-hetero-notes">
          {(node.notes ?? []).map(note => (
            <li key={note}>{note}</li>
          ))}
        </ul>
      )}
    </article>
  );
}
