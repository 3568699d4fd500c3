import * as React from 'react';

/** Props of `ActionButton`. */
export interface IActionButtonProps {
  /** The class naming what it does, e.g. `jp-hetero-action-logs`. */
  className: string;
  label: string;
  /** The accessible name when the label alone is ambiguous (e.g. "Cancel workload 7"). */
  ariaLabel?: string;
  title?: string;
  disabled?: boolean;
  /** A primary action: JupyterLab's accent button instead of a small one. */
  primary?: boolean;
  onClick: () => void;
}

/** A button for one action of the panel. */
export function ActionButton(props: IActionButtonProps): JSX.Element {
  const look = props.primary ? 'jp-Button jp-mod-styled jp-mod-accept' : 'jp-hetero-action';
  return (
    <button
      type="button"
      className={`${look} ${props.className}`}
      onClick={props.onClick}
      disabled={props.disabled}
      aria-label={props.ariaLabel}
      title={props.title}
    >
      {props.label}
    </button>
  );
}
