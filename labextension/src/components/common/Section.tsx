import * as React from 'react';

import type { SectionId } from './SectionTabs';

/** Props of `Section`. */
export interface ISectionProps {
  id: SectionId;
  /** The translated heading. */
  title: string;
  children?: React.ReactNode;
}

/** One section of the panel: a region named by its heading. */
export function Section(props: ISectionProps): JSX.Element {
  const titleId = `jp-hetero-${props.id}-title`;
  return (
    <section className={`jp-hetero-${props.id}`} aria-labelledby={titleId}>
      <h3 className="jp-hetero-section-title" id={titleId}>
        {props.title}
      </h3>
      {props.children}
    </section>
  );
}
