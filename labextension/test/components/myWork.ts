import * as React from 'react';
import { vi } from 'vitest';

import { MyWorkSection } from '../../src/components';
import * as build from '../builders';
import { trans } from '../render';

/** Props of a `MyWorkSection` listing one workload, every action a mock: a test overrides what it watches. */
export function myWorkSectionProps(
  overrides: Partial<React.ComponentProps<typeof MyWorkSection>> = {}
): React.ComponentProps<typeof MyWorkSection> {
  return {
    workloads: [build.workload()],
    explanations: new Map(),
    evidences: new Map(),
    metrics: new Map(),
    busy: new Set(),
    expandedArrays: new Set(),
    trans,
    onToggleArray: vi.fn(),
    onCancelArray: vi.fn(),
    onLogs: vi.fn(),
    onCancel: vi.fn(),
    onExplain: vi.fn(),
    onResubmit: vi.fn(),
    onDismissExplanation: vi.fn(),
    onEvidence: vi.fn(),
    onDismissEvidence: vi.fn(),
    onMetrics: vi.fn(),
    onDismissMetrics: vi.fn(),
    evidencePageUrl: (id: number) => `/hetero/api/v1/workloads/${id}/evidence?format=html&lang=en`,
    ...overrides
  };
}
