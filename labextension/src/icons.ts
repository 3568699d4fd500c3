import { LabIcon } from '@jupyterlab/ui-components';

import heteroSvgstr from '../style/icons/hetero.svg';

/** The chip icon shown on the Hetero sidebar tab. */
export const heteroIcon = new LabIcon({
  name: 'jupyter-hetero:hetero',
  svgstr: heteroSvgstr
});
