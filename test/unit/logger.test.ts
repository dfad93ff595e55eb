import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';

describe('logger', () => {
  it('redacts credentials, keys and secrets wherever they appear', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger({ level: 'info', destination: sink });
    log.info(
      {
        req: { headers: { authorization: 'Bearer apk_topsecret' } },
        apiKey: 'apk_topsecret',
        body: { value: 'apk_topsecret', privateKey: '-----BEGIN', password: 'hunter2' },
      },
      'something happened',
    );
    const out = lines.join('');
    expect(out).toContain('something happened');
    expect(out).not.toContain('topsecret');
    expect(out).not.toContain('BEGIN');
    expect(out).not.toContain('hunter2');
    expect(out).toContain('[redacted]');
  });
});
