import * as React from 'react';

import { ActionButton } from './ActionButton';

/** Props of `RowConfirm`. */
export interface IRowConfirmProps {
  /** The box's class, e.g. `jp-hetero-schedule-confirm`. */
  className: string;
  /** Its accessible name: the question, short. */
  title: string;
  /** The question in full, with what follows the answer. */
  question: string;
  /** The class, label and accessible name of the button that goes ahead. */
  confirm: { className: string; label: string; ariaLabel: string };
  keepLabel: string;
  onConfirm: () => void;
  onKeep: () => void;
}

/** A question asked inside a row before an action that cannot be undone: go ahead, or keep things as they are. */
export function RowConfirm(props: IRowConfirmProps): JSX.Element {
  return (
    <div className={props.className} role="alertdialog" aria-label={props.title}>
      <span>{props.question}</span>
      <ActionButton
        className={props.confirm.className}
        label={props.confirm.label}
        ariaLabel={props.confirm.ariaLabel}
        onClick={props.onConfirm}
      />
      <ActionButton className="jp-hetero-action-keep" label={props.keepLabel} onClick={props.onKeep} />
    </div>
  );
}
