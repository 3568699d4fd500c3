import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { num } from '../../format';
import type { IKernelUsage } from '../../types';

/** Props of `PlacementStatus`. */
export interface IPlacementStatusProps {
  usage: IKernelUsage | null;
  /** The flavor's display name, e.g. "A100-80G". */
  flavorLabel: string;
  trans: TranslationBundle;
}

/** The placement of a hetero kernel in one line: "A100-80G ×1 · experiment · default". */
export function placementText(usage: IKernelUsage, flavorLabel: string): string {
  const head = usage.devices.length > 0 ? `${flavorLabel} ×${usage.devices.length}` : flavorLabel;
  return [head, usage.queue, usage.tenant].filter(Boolean).join(' · ');
}

/** The status bar item of the current notebook's kernel; nothing for kernels that are not hetero kernels. */
export function PlacementStatus(props: IPlacementStatusProps): JSX.Element | null {
  const { usage, trans } = props;
  if (usage === null) {
    return null;
  }
  const util = usage.device_utilisation?.gpu_util_pct;
  const devices = usage.devices.length > 0 ? usage.devices.join(', ') : trans.__('none');
  const title = [
    trans.__('Hetero kernel of template %1', usage.template ?? '?'),
    trans.__('Node: %1', usage.node) + (usage.emulated ? ' ' + trans.__('(emulated)') : ''),
    trans.__('Devices: %1', devices),
    trans.__('Kernel CPU %1%, memory %2 MiB', num(usage.cpu_percent), num(usage.memory_mib, 0)),
    usage.device_note ?? ''
  ]
    .filter(Boolean)
    .join('\n');
  return (
    <span className="jp-hetero-status" title={title} data-flavor={usage.flavor} data-kernel-id={usage.kernel_id}>
      <span className="jp-hetero-status-placement">{placementText(usage, props.flavorLabel)}</span>
      {typeof util === 'number' && (
        <span className="jp-hetero-status-util">{' · ' + trans.__('GPU %1%', num(util, 0))}</span>
      )}
    </span>
  );
}
