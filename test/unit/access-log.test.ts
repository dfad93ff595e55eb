import { Writable } from 'node:stream';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { accessLog } from '../../src/http/access-log.ts';
import { requestId } from '../../src/http/request-id.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { listenOnFreePort } from '../support/http.ts';

/** The access lines a server at `level` writes for one API call, one console file and one health probe. */
async function accessLines(level: string): Promise<Array<{ level: number; path: string }>> {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
  const app = express();
  app.use(requestId, accessLog(createLogger({ level, format: 'json', destination })));
  app.get(['/api/v0/computers', '/assets/app.js', '/healthz'], (_req, res) => res.json({}));
  const base = await listenOnFreePort(app);
  try {
    for (const path of ['/api/v0/computers', '/assets/app.js', '/healthz']) await (await fetch(base.url + path)).text();
  } finally {
    await base.close();
  }
  return lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
}

describe('access log', () => {
  it('logs API requests at info and the console files and health probes only at debug', async () => {
    expect((await accessLines('info')).map((l) => [l.path, l.level])).toEqual([['/api/v0/computers', 30]]);
    expect((await accessLines('debug')).map((l) => [l.path, l.level])).toEqual([
      ['/api/v0/computers', 30],
      ['/assets/app.js', 20],
      ['/healthz', 20],
    ]);
  });
});
