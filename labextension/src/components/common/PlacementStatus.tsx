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
function placementText(usage: IKernelUsage, flavorLabel: string): string {
  const head = usage.devices.length > 0 ? `${flavorLabel} ×${usage.devices.length}` : flavorLabel;
  return [head, usage.queue, usage.tenant].filter(Boolean).join(' · ');
}

/** The details of a placement, one per line: template, node, devices, kernel CPU and memory. */
function placementDetails(usage: IKernelUsage, trans: TranslationBundle): string {
  const devices = usage.devices.length > 0 ? usage.devices.join(', ') : trans.__('none');
  return [
    trans.__('Hetero kernel of template %1', usage.template ?? trans.__('unknown')),
    usage.emulated ? trans.__('Node: %1 (emulated)', usage.node) : trans.__('Node: %1', usage.node),
    trans.__('Devices: %1', devices),
    trans.__('Kernel CPU %1%, memory %2 MiB', num(usage.cpu_percent), num(usage.memory_mib, 0)),
    usage.device_note ?? ''
  ]
    .filter(Boolean)
    .join('\n');
}

/**
 * The status bar item of the current notebook's kernel; nothing for kernels that are not hetero kernels.
 *
 * The details are in a tooltip for the mouse and, for the keyboard and screen readers, in the
 * description of the focusable item (a hidden element it points to), so no one depends on hovering.
 */
export function PlacementStatus(props: IPlacementStatusProps): JSX.Element | null {
  const { usage, trans } = props;
  const detailsId = React.useId();
  if (usage === null) {
    return null;
  }
  const util = usage.device_utilisation?.device_util_pct;
  const placement = placementText(usage, props.flavorLabel);
  const utilText = typeof util === 'number' ? trans.__('device utilisation %1%', num(util, 0)) : null;
  const label = [placement, utilText].filter(Boolean).join(' · ');
  const details = placementDetails(usage, trans);
  return (
    <>
      <span
        className="jp-hetero-placement"
        role="group"
        tabIndex={0}
        aria-label={label}
        aria-describedby={detailsId}
        title={details}
        data-flavor={usage.flavor}
        data-kernel-id={usage.kernel_id}
      >
        <span className="jp-hetero-placement-text">{placement}</span>
        {utilText !== null && <span className="jp-hetero-placement-util">{' · ' + utilText}</span>}
      </span>
      <span id={detailsId} className="jp-hetero-placement-details" hidden>
        {details}
      </span>
    </>
  );
}
