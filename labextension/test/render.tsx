// Renders a component into jsdom for tests, with React's act() around every change.
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { createRoot, Root } from 'react-dom/client';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** The English bundle the components get in tests. */
export const trans = nullTranslator.load('jupyter_hetero');

export interface IRendered {
  host: HTMLElement;
  root: Root;
  /** Render again with new element (new props). */
  rerender: (element: React.ReactElement) => void;
  unmount: () => void;
}

export function render(element: React.ReactElement): IRendered {
  const host = document.createElement('div');
  document.body.appendChild(host);
  const root = createRoot(host);
  act(() => root.render(element));
  return {
    host,
    root,
    rerender: next => act(() => root.render(next)),
    unmount: () => {
      act(() => root.unmount());
      host.remove();
    }
  };
}

/** Click an element inside act(). */
export function click(element: Element | null): void {
  if (!element) {
    throw new Error('nothing to click');
  }
  act(() => {
    (element as HTMLElement).click();
  });
}

/** Set a form control's value the way React notices, then fire `input`/`change`. */
export function change(element: Element | null, value: string): void {
  if (!element) {
    throw new Error('nothing to change');
  }
  const control = element as HTMLInputElement | HTMLSelectElement;
  const prototype = Object.getPrototypeOf(control);
  const setter = Object.getOwnPropertyDescriptor(prototype, 'value')?.set;
  act(() => {
    setter?.call(control, value);
    control.dispatchEvent(new Event(control.tagName === 'SELECT' ? 'change' : 'input', { bubbles: true }));
  });
}

/** Press a key on an element inside act(). */
export function press(element: Element | null, key: string): void {
  act(() => {
    element?.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
  });
}
