import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { Lang } from './types';

/** Path of the jupyter-hetero REST API below the server's base URL. */
export const API_NAMESPACE = 'hetero/api/v1';

/**
 * A failed call to the jupyter-hetero REST API.
 *
 * `message` is the server's own explanation (the `message` field of its JSON
 * error body, or `message_zh` when the call asked for Chinese and the server has it) when it sent one; `status` is 0 when the server was not reached.
 */
export class HeteroAPIError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string | null = null,
    /** The request field a 400 names (`cron`, `job.template`), as the server wrote it; null when it named none. */
    readonly field: string | null = null
  ) {
    super(message);
    this.name = 'HeteroAPIError';
  }
}

/**
 * Call `/hetero/api/v1/<endPoint>` and return its decoded JSON body.
 *
 * ```ts
 * const info = await requestAPI<{ version: string }>('version');
 * ```
 *
 * `settings` is a test seam: pass `ServerConnection.makeSettings({ fetch })`
 * to answer requests without a server. `lang` is the language an error is told in.
 */
export async function requestAPI<T>(
  endPoint = '',
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings(),
  lang: Lang = 'en'
): Promise<T> {
  const response = await send(endPoint, init, settings);
  const body = await decodeBody(response);
  if (!response.ok) {
    throw errorFrom(response, body, lang);
  }
  return body as T;
}

/**
 * Call a plain-text endpoint and hand each decoded chunk to `onChunk` as it arrives.
 *
 * ```ts
 * await streamAPI('workloads/7/logs?follow=true', text => view.append(text), abort.signal);
 * ```
 *
 * Resolves when the server ends the response; rejects with `HeteroAPIError`
 * on an HTTP error, or with the abort reason when `signal` fires.
 */
export async function streamAPI(
  endPoint: string,
  onChunk: (text: string) => void,
  signal?: AbortSignal,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<void> {
  // `no-cache` rather than JupyterLab's `no-store`, whose cache buster the API rejects.
  const response = await send(endPoint, { method: 'GET', cache: 'no-cache', signal }, settings);
  if (!response.ok) {
    throw errorFrom(response, await decodeBody(response));
  }
  if (response.body === null) {
    onChunk(await response.text());
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    const text = decoder.decode(value, { stream: true });
    if (text.length > 0) {
      onChunk(text);
    }
  }
  const rest = decoder.decode();
  if (rest.length > 0) {
    onChunk(rest);
  }
}

/** One request to the API; a network failure becomes a `HeteroAPIError` with status 0 (an abort stays an abort). */
async function send(endPoint: string, init: RequestInit, settings: ServerConnection.ISettings): Promise<Response> {
  const url = apiPageUrl(endPoint, settings);
  try {
    return await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    if (init.signal?.aborted) {
      throw error;
    }
    throw new HeteroAPIError(error instanceof Error ? error.message : String(error), 0);
  }
}

function errorFrom(response: Response, body: unknown, lang: Lang = 'en'): HeteroAPIError {
  const told = lang === 'zh' ? errorField(body, 'message_zh') : null;
  return new HeteroAPIError(
    told ?? errorField(body, 'message') ?? (response.statusText || `HTTP ${response.status}`),
    response.status,
    errorField(body, 'reason'),
    errorField(body, 'field')
  );
}

async function decodeBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text.length === 0) {
    return null;
  }
  try {
    return JSON.parse(text);
  } catch {
    // A proxy in front of the server may answer with HTML; keep it for the error path.
    return text;
  }
}

function errorField(body: unknown, field: string): string | null {
  if (body !== null && typeof body === 'object') {
    const value = (body as Record<string, unknown>)[field];
    if (typeof value === 'string' && value.length > 0) {
      return value;
    }
  }
  return null;
}

/** A page of the REST API to open in the browser (its session cookie authenticates it), e.g. the HTML report. */
export function apiPageUrl(
  endPoint: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): string {
  return URLExt.join(settings.baseUrl, API_NAMESPACE, endPoint);
}
