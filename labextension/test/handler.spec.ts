import { ServerConnection } from '@jupyterlab/services';
import { describe, expect, it } from 'vitest';

import { HeteroAPIError, requestAPI, streamAPI } from '../src/handler';

/** Server settings whose fetch answers every request with `respond`. */
function settingsAnswering(
  respond: (url: string) => Response,
  seen: string[] = []
): ServerConnection.ISettings {
  return ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/base/',
    fetch: async (input: RequestInfo | URL) => {
      const url = input instanceof Request ? input.url : String(input);
      seen.push(url);
      return respond(url);
    }
  });
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' }
  });
}

describe('requestAPI', () => {
  it('calls /hetero/api/v1/<endPoint> under the base URL and decodes JSON', async () => {
    const seen: string[] = [];
    const settings = settingsAnswering(() => json(200, { version: '0.1.0' }), seen);

    const info = await requestAPI<{ version: string }>('version', {}, settings);

    expect(info).toEqual({ version: '0.1.0' });
    expect(seen[0]).toMatch(/^http:\/\/localhost:8888\/base\/hetero\/api\/v1\/version/);
  });

  it('throws HeteroAPIError carrying the server message and status', async () => {
    const settings = settingsAnswering(() =>
      json(409, { message: 'Quota exceeded for tenant t1', reason: 'quota' })
    );

    const failure = requestAPI('workloads', { method: 'POST' }, settings);

    await expect(failure).rejects.toBeInstanceOf(HeteroAPIError);
    await expect(failure).rejects.toMatchObject({
      message: 'Quota exceeded for tenant t1',
      status: 409,
      reason: 'quota'
    });
  });

  it('keeps the field a 400 names, for the form to show it beside that field', async () => {
    const settings = settingsAnswering(() =>
      json(400, { message: "field 'cron': not a cron", field: 'cron', errors: [{ field: 'cron', message: 'not a cron' }] })
    );
    await expect(requestAPI('schedules', { method: 'POST' }, settings)).rejects.toMatchObject({
      status: 400,
      field: 'cron',
      reason: null
    });
    const unnamed = settingsAnswering(() => json(409, { message: 'taken' }));
    await expect(requestAPI('schedules', { method: 'POST' }, unnamed)).rejects.toMatchObject({ field: null });
  });

  it('tells the error in Chinese when the call asks for it and the server has it', async () => {
    const body = { message: 'no tenant', message_zh: '没有租户', reason: 'no-tenant' };
    const settings = settingsAnswering(() => json(403, body));

    await expect(requestAPI('workloads', {}, settings, 'zh')).rejects.toMatchObject({ message: '没有租户', status: 403 });
    await expect(requestAPI('workloads', {}, settings, 'en')).rejects.toMatchObject({ message: 'no tenant' });
    const englishOnly = settingsAnswering(() => json(404, { message: 'workload 9 does not exist' }));
    await expect(requestAPI('workloads/9', {}, englishOnly, 'zh')).rejects.toMatchObject({
      message: 'workload 9 does not exist'
    });
  });

  it('falls back to the HTTP status text when the body is not JSON', async () => {
    const settings = settingsAnswering(
      () => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' })
    );

    await expect(requestAPI('version', {}, settings)).rejects.toMatchObject({
      message: 'Bad Gateway',
      status: 502
    });
  });

  it('reports an unreachable server as status 0', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/',
      fetch: async () => {
        throw new TypeError('Failed to fetch');
      }
    });

    await expect(requestAPI('version', {}, settings)).rejects.toMatchObject({
      name: 'HeteroAPIError',
      status: 0
    });
  });
});

describe('streamAPI', () => {
  function chunked(parts: string[], status = 200): Response {
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const part of parts) {
          controller.enqueue(encoder.encode(part));
        }
        controller.close();
      }
    });
    return new Response(body, { status, headers: { 'Content-Type': 'text/plain' } });
  }

  it('hands each chunk over as it arrives, including split UTF-8', async () => {
    const bytes = new TextEncoder().encode('容量');
    const encoderless = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('line 1\n'));
        controller.enqueue(bytes.slice(0, 2));
        controller.enqueue(bytes.slice(2));
        controller.close();
      }
    });
    const seen: string[] = [];
    const settings = settingsAnswering(url => {
      seen.push(url);
      return new Response(encoderless, { status: 200 });
    });
    const chunks: string[] = [];
    await streamAPI('workloads/7/logs?follow=true', chunk => chunks.push(chunk), undefined, settings);
    expect(chunks.join('')).toBe('line 1\n容量');
    expect(chunks[0]).toBe('line 1\n');
    expect(seen[0]).toMatch(/workloads\/7\/logs\?follow=true$/);
  });

  it('throws the server message on an HTTP error', async () => {
    const settings = settingsAnswering(() => json(404, { message: 'no workload 9' }));
    await expect(streamAPI('workloads/9/logs', () => undefined, undefined, settings)).rejects.toMatchObject({
      message: 'no workload 9',
      status: 404
    });
  });

  it('reads plain bodies too', async () => {
    const settings = settingsAnswering(() => chunked(['a', 'b']));
    const chunks: string[] = [];
    await streamAPI('workloads/7/logs', chunk => chunks.push(chunk), undefined, settings);
    expect(chunks.join('')).toBe('ab');
  });
});
