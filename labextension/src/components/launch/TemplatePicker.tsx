import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { localized, taskTypeLabel } from '../../format';
import type { ITemplate, Lang } from '../../types';

/** Props of `TemplatePicker`. */
export interface ITemplatePickerProps {
  templates: readonly ITemplate[];
  selected: string | null;
  lang: Lang;
  trans: TranslationBundle;
  onSelect: (name: string) => void;
}

/** Templates in catalog order, grouped by task type. */
function groupByTaskType(templates: readonly ITemplate[]): Array<[string, ITemplate[]]> {
  const groups = new Map<string, ITemplate[]>();
  for (const template of templates) {
    const group = groups.get(template.task_type) ?? [];
    group.push(template);
    groups.set(template.task_type, group);
  }
  return [...groups.entries()];
}

/** A template chooser: one option per template, grouped by task type, named in the UI's language. */
export function TemplatePicker(props: ITemplatePickerProps): JSX.Element {
  const { trans, lang } = props;
  return (
    <label className="jp-hetero-field jp-hetero-template-picker">
      <span className="jp-hetero-field-label">{trans.__('Template')}</span>
      <select
        value={props.selected ?? ''}
        onChange={event => props.onSelect(event.target.value)}
        disabled={props.templates.length === 0}
      >
        {groupByTaskType(props.templates).map(([taskType, templates]) => (
          <optgroup key={taskType} label={taskTypeLabel(taskType, trans)}>
            {templates.map(template => (
              <option key={template.name} value={template.name}>
                {localized(template.display, lang, template.name)}
              </option>
            ))}
          </optgroup>
        ))}
      </select>
    </label>
  );
}
