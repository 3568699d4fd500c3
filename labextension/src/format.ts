import { TranslationBundle } from '@jupyterlab/translation';

import type {
  IDeviceInfo,
  ILocalized,
  INetwork,
  IPlacement,
  IResourceRequest,
  Lang,
  WorkloadKind,
  WorkloadState
} from './types';

/** The API language for a JupyterLab language code: `zh-CN` -> `zh`, anything else -> `en`. */
export function apiLang(languageCode: string | undefined | null): Lang {
  return (languageCode ?? '').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

/** The catalog text in the UI's language, falling back to English. */
export function localized(text: ILocalized | undefined | null, lang: Lang, fallback = ''): string {
  if (!text) {
    return fallback;
  }
  return (lang === 'zh' ? text.zh : text.en) || text.en || fallback;
}

/** A number without trailing zeros, at most `digits` decimals: 1.50 -> "1.5". */
export function num(value: number, digits = 1): string {
  return String(Number(value.toFixed(digits)));
}

/** Memory in MiB as people read it: 65536 -> "64 GiB", 512 -> "512 MiB". */
export function formatMemory(mib: number): string {
  if (mib >= 1024 * 1024) {
    return `${num(mib / 1024 / 1024)} TiB`;
  }
  return mib >= 1024 ? `${num(mib / 1024)} GiB` : `${num(mib, 0)} MiB`;
}

/** Devices by fast-link domain, each with its devices' indexes: ["hccs-0: 0-3", "hccs-1: 4-7"]; none unlinked. */
export function formatLinkDomains(devices: IDeviceInfo[]): string[] {
  const domains = new Map<string, number[]>();
  for (const device of devices) {
    if (device.link_domain) {
      domains.set(device.link_domain, [...(domains.get(device.link_domain) ?? []), device.index]);
    }
  }
  return [...domains].map(([domain, indexes]) => `${domain}: ${formatIndexes(indexes)}`);
}

/** Indexes as runs: [0, 1, 2, 3, 6] -> "0-3, 6". */
export function formatIndexes(indexes: number[]): string {
  const runs: string[] = [];
  const sorted = [...indexes].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i++) {
    const start = sorted[i];
    while (i + 1 < sorted.length && sorted[i + 1] === sorted[i] + 1) {
      i++;
    }
    runs.push(start === sorted[i] ? `${start}` : `${start}-${sorted[i]}`);
  }
  return runs.join(', ');
}

/** A node's network: "RDMA, 200 Gb/s" or "Ethernet, 25 Gb/s". */
export function formatNetwork(network: INetwork, trans: TranslationBundle): string {
  const speed = `${num(network.bandwidth_gbps)} Gb/s`;
  return network.rdma ? trans.__('RDMA, %1', speed) : trans.__('Ethernet, %1', speed);
}

/** Milli-cores as cores: 8000 -> "8". */
export function formatCpu(milli: number): string {
  return num(milli / 1000);
}

/** A duration in seconds, short: 45 -> "45 s", 5400 -> "1.5 h". */
export function formatDuration(seconds: number, trans: TranslationBundle): string {
  if (seconds < 90) {
    return trans.__('%1 s', num(seconds, 0));
  }
  if (seconds < 90 * 60) {
    return trans.__('%1 min', num(seconds / 60, 0));
  }
  if (seconds < 48 * 3600) {
    return trans.__('%1 h', num(seconds / 3600));
  }
  return trans.__('%1 d', num(seconds / 86400));
}

/** When work may start: "starts now", "ETA ~12 min" or "ETA unknown". */
export function formatEta(etaS: number | null | undefined, trans: TranslationBundle): string {
  if (etaS === null || etaS === undefined) {
    return trans.__('ETA unknown');
  }
  if (etaS <= 0) {
    return trans.__('starts now');
  }
  return trans.__('ETA ~%1', formatDuration(etaS, trans));
}

/** Seconds from now until an absolute ETA (epoch seconds), never negative. */
export function secondsUntil(epochS: number | null | undefined, nowMs: number = Date.now()): number | null {
  if (epochS === null || epochS === undefined) {
    return null;
  }
  return Math.max(0, epochS - nowMs / 1000);
}

/** A default request in one line: "1× GPU ≥ 40 GiB · 8 CPU · 64 GiB". */
export function formatRequest(request: IResourceRequest, trans: TranslationBundle): string {
  const parts: string[] = [];
  if (request.devices > 0) {
    parts.push(
      request.device_memory_mib
        ? trans.__('%1× device ≥ %2', request.devices, formatMemory(request.device_memory_mib))
        : trans.__('%1× device', request.devices)
    );
  } else if (request.device_milli) {
    parts.push(trans.__('%1 of a device', num(request.device_milli / 1000, 2)));
  }
  parts.push(trans.__('%1 CPU', formatCpu(request.cpu_milli)));
  parts.push(trans.__('%1 memory', formatMemory(request.memory_mib)));
  if (request.replicas > 1) {
    parts.push(trans.__('%1 replicas', request.replicas));
  }
  return parts.join(' · ');
}

/** Where work runs: "gpu-a100-0 [0, 1]" per replica. */
export function formatPlacement(placement: IPlacement | null | undefined): string {
  if (!placement || !placement.slots) {
    return '';
  }
  return placement.slots
    .map(slot => {
      const devices = slot.devices.map(device => device.index);
      return devices.length > 0 ? `${slot.node} [${devices.join(', ')}]` : slot.node;
    })
    .join(', ');
}

/** The translated name of a workload state. */
export function stateLabel(state: WorkloadState | string, trans: TranslationBundle): string {
  switch (state) {
    case 'queued':
      return trans.__('queued');
    case 'inadmissible':
      return trans.__('inadmissible');
    case 'admitted':
      return trans.__('admitted');
    case 'starting':
      return trans.__('starting');
    case 'running':
      return trans.__('running');
    case 'succeeded':
      return trans.__('succeeded');
    case 'failed':
      return trans.__('failed');
    case 'cancelled':
      return trans.__('cancelled');
    case 'preempted':
      return trans.__('preempted');
    case 'lost':
      return trans.__('lost');
    default:
      return state;
  }
}

/** The first words of an inadmissible workload's stored reason, for when its blockers are not at hand (after a
 * restart, before the scheduler looked at it again), as the server writes them (platform/scheduling/inadmissible.py). */
const INADMISSIBLE_REASONS: [string, InadmissibleCase][] = [
  ["its tenant's quota can never give it", 'exceeds-quota'],
  ['no node or quota can ever give it', 'nodes-and-quota'],
  ['its nodes were lost', 'node-lost'],
  ['its nodes are cordoned', 'cordoned'],
  ['its nodes are lost or cordoned', 'lost-or-cordoned'],
  ['the reloaded catalog has no ', 'stranded']
];

type InadmissibleCase =
  | 'exceeds-quota'
  | 'nodes-and-quota'
  | 'node-lost'
  | 'cordoned'
  | 'lost-or-cordoned'
  | 'stranded'
  | 'nodes';

/**
 * Why an inadmissible workload waits and what lifts it, from what its blockers have in common (else its stored
 * reason): a request beyond its tenant's quota, nodes lost or cordoned, a reloaded catalog, or no node at all. The
 * blockers below it give the figures.
 */
export function inadmissibleText(
  workload: { blockers?: readonly { kind: string }[] | null; reason?: string | null },
  trans: TranslationBundle
): string {
  const kinds = new Set((workload.blockers ?? []).map(blocker => blocker.kind));
  const quota = [...kinds].filter(kind => kind.startsWith('exceeds-quota')).length;
  const lostOrCordoned = [...kinds].filter(kind => kind === 'node-lost' || kind === 'cordoned').length;
  let found: InadmissibleCase = 'nodes';
  if (kinds.size === 0) {
    const reason = workload.reason ?? '';
    found = INADMISSIBLE_REASONS.find(([start]) => reason.startsWith(start))?.[1] ?? 'nodes';
  } else if (quota === kinds.size) {
    found = 'exceeds-quota';
  } else if (quota > 0) {
    found = 'nodes-and-quota';
  } else if (lostOrCordoned > 0) {
    // A node back (or uncordoned) lifts it, whatever the other flavors lack.
    found = lostOrCordoned === 2 ? 'lost-or-cordoned' : kinds.has('node-lost') ? 'node-lost' : 'cordoned';
  }
  switch (found) {
    case 'exceeds-quota':
      return trans.__(
        'Request exceeds the tenant\'s quota: it can never run as asked; it is queued again when the catalog\'s quota grows.'
      );
    case 'nodes-and-quota':
      return trans.__(
        'No node or quota can ever give it what it asks; it is queued again when the inventory or the catalog\'s quota changes.'
      );
    case 'node-lost':
      return trans.__('The nodes of its flavor were lost; it waits until one is back or another node joins the flavor.');
    case 'cordoned':
      return trans.__(
        'The nodes of its flavor are cordoned; it waits until one is uncordoned or another node joins the flavor.'
      );
    case 'lost-or-cordoned':
      return trans.__(
        'The nodes of its flavors are lost or cordoned; it waits until one is back or uncordoned, or another node joins.'
      );
    case 'stranded':
      return trans.__(
        'The reloaded catalog no longer has its queue, tenant or template; it waits until they are back, or until it is cancelled.'
      );
    default:
      return trans.__('No node can ever hold it; it is queued again when the inventory changes.');
  }
}

/** Whether a workload has ended and will not change any more by itself. */
export function isFinished(state: WorkloadState | string): boolean {
  return ['succeeded', 'failed', 'cancelled', 'lost'].includes(state);
}

/** The translated name of a workload kind. */
export function kindLabel(kind: WorkloadKind | string, trans: TranslationBundle): string {
  switch (kind) {
    case 'kernel':
      return trans.__('kernel');
    case 'job':
      return trans.__('job');
    case 'service':
      return trans.__('service');
    default:
      return kind;
  }
}

/** The translated name of a catalog task type. */
export function taskTypeLabel(taskType: string, trans: TranslationBundle): string {
  switch (taskType) {
    case 'data-preprocessing':
      return trans.__('Data preprocessing');
    case 'training':
      return trans.__('Training');
    case 'fine-tuning':
      return trans.__('Fine-tuning');
    case 'online-inference':
      return trans.__('Online inference');
    case 'batch-inference':
      return trans.__('Batch inference');
    case 'embedding':
      return trans.__('Embedding');
    case 'vision':
      return trans.__('Vision');
    case 'hpc':
      return trans.__('HPC');
    case 'interactive':
      return trans.__('Interactive');
    default:
      return taskType;
  }
}

/** The translated name of a node state. */
export function nodeStateLabel(state: string, trans: TranslationBundle): string {
  switch (state) {
    case 'ready':
      return trans.__('ready');
    case 'onboarding':
      return trans.__('onboarding');
    case 'cordoned':
      return trans.__('cordoned: takes no new work');
    case 'lost':
      return trans.__('lost');
    default:
      return state;
  }
}
