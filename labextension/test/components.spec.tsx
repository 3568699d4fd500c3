import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { HeteroPanelView } from '../src/components';

const trans = nullTranslator.load('jupyter_hetero');

function render(props: Partial<React.ComponentProps<typeof HeteroPanelView>>): HTMLElement {
  const host = document.createElement('div');
  host.innerHTML = renderToStaticMarkup(
    <HeteroPanelView
      version={null}
      error={null}
      loading={false}
      trans={trans}
      onRefresh={() => undefined}
      {...props}
    />
  );
  return host;
}

describe('HeteroPanelView', () => {
  it('shows the version once known', () => {
    const host = render({ version: '0.1.0' });
    expect(host.querySelector('.jp-hetero-version')?.textContent).toBe('jupyter-hetero 0.1.0');
    expect(host.querySelector('.jp-hetero-error')).toBeNull();
  });

  it('shows the error next to the last known version', () => {
    const host = render({ version: '0.1.0', error: 'Forbidden' });
    expect(host.querySelector('.jp-hetero-error')?.textContent).toContain('Forbidden');
    expect(host.querySelector('.jp-hetero-version')).not.toBeNull();
  });

  it('says it is loading before the first answer', () => {
    const host = render({ loading: true });
    expect(host.querySelector('.jp-hetero-loading')).not.toBeNull();
    expect(host.querySelector('.jp-hetero-refresh')?.hasAttribute('disabled')).toBe(true);
  });
});
