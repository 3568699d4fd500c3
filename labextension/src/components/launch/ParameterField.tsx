import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatDuration, formatMemory, num } from '../../format';
import { isNumeric, type ParameterProblem } from '../../models/parameters';
import type { IAdvancedParameter } from '../../types';

/** Props of `ParameterField`. */
export interface IParameterFieldProps {
  parameter: IAdvancedParameter;
  value: string;
  problem: ParameterProblem | null;
  trans: TranslationBundle;
  onChange: (value: string) => void;
}

/** The translated name of an advanced parameter. */
function parameterLabel(name: string, trans: TranslationBundle): string {
  switch (name) {
    case 'devices':
      return trans.__('Devices');
    case 'device_milli':
      return trans.__('Device fraction (milli)');
    case 'device_memory':
      return trans.__('Device memory');
    case 'cpu':
      return trans.__('CPU cores');
    case 'memory':
      return trans.__('Memory');
    case 'time_limit':
      return trans.__('Time limit');
    case 'replicas':
      return trans.__('Replicas');
    case 'variant':
      return trans.__('Image variant');
    case 'flavor':
      return trans.__('Flavor');
    default:
      return name;
  }
}

/** A bound or default in the parameter's unit, as people read it. */
function showValue(parameter: IAdvancedParameter, value: number | string, trans: TranslationBundle): string {
  if (typeof value === 'string') {
    return value;
  }
  if (parameter.type === 'memory') {
    return formatMemory(value);
  }
  if (parameter.type === 'duration') {
    return formatDuration(value, trans);
  }
  return num(value, 3);
}

function problemText(problem: ParameterProblem, parameter: IAdvancedParameter, trans: TranslationBundle): string {
  switch (problem) {
    case 'not-a-number':
      return trans.__('Enter a number.');
    case 'not-whole':
      return trans.__('Enter a whole number.');
    case 'below-min':
      return trans.__('At least %1.', showValue(parameter, parameter.min ?? 0, trans));
    case 'above-max':
      return trans.__('At most %1.', showValue(parameter, parameter.max ?? 0, trans));
    case 'not-a-choice':
      return trans.__('Choose one of: %1.', parameter.choices.join(', '));
  }
}

/** One bounded advanced parameter: a number, a quantity with units, or a choice. */
export function ParameterField(props: IParameterFieldProps): JSX.Element {
  const { parameter, trans, problem } = props;
  const id = `jp-hetero-param-${parameter.name}`;
  const hintId = `${id}-hint`;
  const defaultText =
    parameter.default === null || parameter.default === undefined
      ? trans.__('template default')
      : showValue(parameter, parameter.default, trans);
  const bounds =
    parameter.min !== null && parameter.max !== null
      ? trans.__('%1 to %2', showValue(parameter, parameter.min, trans), showValue(parameter, parameter.max, trans))
      : '';
  const unitHint =
    parameter.type === 'memory'
      ? trans.__('e.g. 64Gi or MiB')
      : parameter.type === 'duration'
        ? trans.__('e.g. 2h, 30m or seconds')
        : '';
  const numeric = isNumeric(parameter);
  const common = {
    id,
    'aria-describedby': hintId,
    'aria-invalid': problem !== null
  };
  return (
    <div className="jp-hetero-field jp-hetero-param" data-parameter={parameter.name}>
      <label className="jp-hetero-field-label" htmlFor={id}>
        {parameterLabel(parameter.name, trans)}
      </label>
      {parameter.type === 'choice' ? (
        <select {...common} value={props.value} onChange={event => props.onChange(event.target.value)}>
          <option value="">{trans.__('Default (%1)', defaultText)}</option>
          {parameter.choices.map(choice => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          className="jp-mod-styled"
          type={numeric ? 'number' : 'text'}
          min={numeric ? (parameter.min ?? undefined) : undefined}
          max={numeric ? (parameter.max ?? undefined) : undefined}
          step={parameter.type === 'int' ? 1 : 'any'}
          placeholder={defaultText}
          value={props.value}
          onChange={event => props.onChange(event.target.value)}
        />
      )}
      <span className="jp-hetero-hint" id={hintId}>
        {[bounds, unitHint].filter(Boolean).join(' · ')}
      </span>
      {problem !== null && (
        <span className="jp-hetero-field-problem" role="alert">
          {problemText(problem, parameter, trans)}
        </span>
      )}
    </div>
  );
}
