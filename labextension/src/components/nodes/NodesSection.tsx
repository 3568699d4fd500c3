import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { INode } from '../../types';
import { Section } from '../common/Section';
import { NodeCard } from './NodeCard';

/** Props of `NodesSection`. */
export interface INodesSectionProps {
  nodes: readonly INode[];
  trans: TranslationBundle;
}

/** The inventory: real nodes first, then emulated ones, each by name. */
export function NodesSection(props: INodesSectionProps): JSX.Element {
  const { trans } = props;
  const nodes = [...props.nodes].sort(
    (a, b) => Number(a.emulated) - Number(b.emulated) || a.name.localeCompare(b.name)
  );
  const emulated = nodes.filter(node => node.emulated).length;
  return (
    <Section id="nodes" title={trans.__('Nodes')}>
      <div className="jp-hetero-hint">
        {trans.__('%1 nodes, %2 of them emulated', nodes.length, emulated)}
      </div>
      {nodes.map(node => (
        <NodeCard key={node.name} node={node} trans={trans} />
      ))}
    </Section>
  );
}
