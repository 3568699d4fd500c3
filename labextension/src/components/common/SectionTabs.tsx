import * as React from 'react';

/** The sections of the Hetero panel. */
export type SectionId = 'launch' | 'queues' | 'work' | 'schedules' | 'services' | 'nodes' | 'admin';

/** One tab: its section and translated label. */
export interface ISectionTab {
  id: SectionId;
  label: string;
}

/** Props of `SectionTabs`. */
export interface ISectionTabsProps {
  tabs: ISectionTab[];
  current: SectionId;
  /** Accessible name of the tab list. */
  label: string;
  onSelect: (id: SectionId) => void;
}

/** DOM id of a section's tab panel, which its tab controls (only the current one is rendered). */
export function sectionPanelId(id: SectionId): string {
  return `jp-hetero-section-${id}`;
}

/** DOM id of a section's tab. */
export function sectionTabId(id: SectionId): string {
  return `jp-hetero-tab-${id}`;
}

/** The panel's section switcher: a WAI-ARIA tab list (arrow keys, Home and End move). */
export function SectionTabs(props: ISectionTabsProps): JSX.Element {
  const { tabs, current, onSelect } = props;
  const refs = React.useRef<Record<string, HTMLButtonElement | null>>({});
  const move = (event: React.KeyboardEvent, index: number): void => {
    const last = tabs.length - 1;
    const next: Record<string, number> = {
      ArrowRight: index === last ? 0 : index + 1,
      ArrowLeft: index === 0 ? last : index - 1,
      Home: 0,
      End: last
    };
    if (event.key in next) {
      event.preventDefault();
      const target = tabs[next[event.key]];
      onSelect(target.id);
      refs.current[target.id]?.focus();
    }
  };
  return (
    <div className="jp-hetero-tabs" role="tablist" aria-label={props.label}>
      {tabs.map((tab, index) => (
        <button
          key={tab.id}
          ref={element => {
            refs.current[tab.id] = element;
          }}
          type="button"
          role="tab"
          id={sectionTabId(tab.id)}
          className={'jp-hetero-tab' + (tab.id === current ? ' jp-mod-current' : '')}
          aria-selected={tab.id === current}
          // Only the current section's panel is in the DOM; an id that points nowhere would be broken.
          aria-controls={tab.id === current ? sectionPanelId(tab.id) : undefined}
          tabIndex={tab.id === current ? 0 : -1}
          data-section={tab.id}
          onClick={() => onSelect(tab.id)}
          onKeyDown={event => move(event, index)}
        >
          {tab.label}
        </button>
      ))}
    </div>
  );
}
