import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatEta, localized, num } from '../../format';
import type { IFlavorPreview, IPreview, Lang } from '../../types';

/** An image without its registry and path: `nvcr.io/nvidia/pytorch:24.10-py3` -> `pytorch:24.10-py3`. */
function shortImage(image: string): string {
  return image.slice(image.lastIndexOf('/') + 1);
}

/** Props of `FlavorChoices`. */
export interface IFlavorChoicesProps {
  preview: IPreview | null;
  error: string | null;
  /** Whether the template lets the user pick a flavor (it has a `flavor` parameter). */
  selectable: boolean;
  /** The chosen flavor; '' for "any". */
  chosen: string;
  lang: Lang;
  trans: TranslationBundle;
  onChoose: (flavor: string) => void;
}

/** Free capacity of a flavor in words: devices for accelerators, cores for CPUs. */
function capacity(flavor: IFlavorPreview, trans: TranslationBundle): string {
  if (flavor.devices_total > 0) {
    return trans.__('%1 of %2 devices free', num(flavor.devices_free, 2), num(flavor.devices_total, 2));
  }
  if (flavor.cpu_free !== undefined && flavor.cpu_free > 0) {
    return trans.__('%1 CPU free', num(flavor.cpu_free));
  }
  return trans.__('no capacity');
}

/** Whether a flavor could ever take the request (the preview says `schedulable: false` otherwise). */
function schedulable(flavor: IFlavorPreview): boolean {
  return flavor.schedulable !== false;
}

/**
 * The template's eligible flavors in order, each with free capacity and ETA
 * from the preview. Unschedulable flavors are greyed out with the reason.
 *
 * When the template lets the user pick a flavor, the rows form a radio group
 * named by the heading, with native radio buttons (disabled for flavors that
 * cannot be scheduled); otherwise they are a plain list.
 */
export function FlavorChoices(props: IFlavorChoicesProps): JSX.Element {
  const { preview, trans, lang, selectable } = props;
  const baseId = React.useId();
  const titleId = `${baseId}-title`;
  const title = (
    <h4 className="jp-hetero-subtitle" id={titleId}>
      {trans.__('Eligible flavors')}
    </h4>
  );
  if (props.error !== null) {
    return (
      <div className="jp-hetero-flavors">
        {title}
        <div className="jp-hetero-error" role="alert">
          {props.error}
        </div>
      </div>
    );
  }
  if (preview === null) {
    return (
      <div className="jp-hetero-flavors">
        {title}
        <div className="jp-hetero-loading">{trans.__('Asking the scheduler…')}</div>
      </div>
    );
  }
  // A radio group's options are not list items: rows are divs there, list items otherwise.
  const Row = selectable ? 'div' : 'li';
  const row = (flavor: IFlavorPreview, index: number): JSX.Element => {
    const ok = schedulable(flavor);
    const reason = flavor.starts_now ? null : flavor.blockers[0] ?? null;
    const reasonId = `${baseId}-reason-${index}`;
    const name = localized(flavor.display, lang, flavor.flavor);
    return (
      <Row
        key={flavor.flavor}
        className={'jp-hetero-flavor' + (ok ? '' : ' jp-hetero-mod-unschedulable')}
        data-flavor={flavor.flavor}
        data-starts-now={flavor.starts_now}
      >
        <label className="jp-hetero-flavor-head">
          {selectable && (
            <input
              type="radio"
              name={baseId}
              value={flavor.flavor}
              checked={props.chosen === flavor.flavor}
              disabled={!ok}
              aria-describedby={reason !== null ? reasonId : undefined}
              onChange={() => props.onChoose(flavor.flavor)}
            />
          )}
          <span className="jp-hetero-flavor-name">{name}</span>
          <span className="jp-hetero-flavor-capacity">{capacity(flavor, trans)}</span>
          <span className="jp-hetero-flavor-eta">
            {ok ? formatEta(flavor.eta_s, trans) : trans.__('not schedulable')}
          </span>
          {ok && flavor.image && (
            <span className="jp-hetero-flavor-image" title={flavor.image}>
              {trans.__('image %1', shortImage(flavor.image))}
            </span>
          )}
        </label>
        {reason !== null && (
          <div className="jp-hetero-flavor-reason" id={reasonId}>
            {reason}
          </div>
        )}
      </Row>
    );
  };
  if (!selectable) {
    return (
      <div className="jp-hetero-flavors">
        {title}
        <ul className="jp-hetero-flavor-list" aria-labelledby={titleId}>
          {preview.flavors.map(row)}
        </ul>
      </div>
    );
  }
  return (
    <div className="jp-hetero-flavors">
      {title}
      <div className="jp-hetero-flavor-list" role="radiogroup" aria-labelledby={titleId}>
        <div className="jp-hetero-flavor" data-flavor="">
          <label className="jp-hetero-flavor-head">
            <input
              type="radio"
              name={baseId}
              value=""
              checked={props.chosen === ''}
              onChange={() => props.onChoose('')}
            />
            <span className="jp-hetero-flavor-name">{trans.__('Any eligible flavor')}</span>
            <span className="jp-hetero-flavor-eta">{formatEta(preview.eta_s, trans)}</span>
          </label>
        </div>
        {preview.flavors.map(row)}
      </div>
    </div>
  );
}
