import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { ParameterProblem } from '../../models/parameters';
import type { IAdvancedParameter } from '../../types';
import { ParameterField } from './ParameterField';

/** Props of `AdvancedParameters`. */
export interface IAdvancedParametersProps {
  parameters: readonly IAdvancedParameter[];
  values: Readonly<Record<string, string>>;
  problems: Readonly<Record<string, ParameterProblem>>;
  trans: TranslationBundle;
  onChange: (name: string, value: string) => void;
}

/**
 * The template's bounded parameters in a collapsible "Advanced" group; empty
 * fields keep the template's defaults. The flavor is chosen in the flavor list.
 */
export function AdvancedParameters(props: IAdvancedParametersProps): JSX.Element | null {
  const { trans } = props;
  const shown = props.parameters.filter(parameter => parameter.name !== 'flavor');
  if (shown.length === 0) {
    return null;
  }
  const changed = shown.filter(parameter => (props.values[parameter.name] ?? '') !== '').length;
  return (
    <details className="jp-hetero-advanced" open={changed > 0 || undefined}>
      <summary>
        {changed > 0 ? trans.__('Advanced (%1 changed)', changed) : trans.__('Advanced')}
      </summary>
      {shown.map(parameter => (
        <ParameterField
          key={parameter.name}
          parameter={parameter}
          value={props.values[parameter.name] ?? ''}
          problem={props.problems[parameter.name] ?? null}
          trans={trans}
          onChange={value => props.onChange(parameter.name, value)}
        />
      ))}
    </details>
  );
}
