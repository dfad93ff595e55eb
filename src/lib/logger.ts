import { pino, type Logger } from 'pino';

export type { Logger };

/** Paths whose values never reach a log line: credentials, keys, tokens, passwords. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'apiKey',
  'value',
  'password',
  'privateKey',
  'secret',
  'token',
  '*.apiKey',
  '*.value',
  '*.password',
  '*.privateKey',
  '*.secret',
  '*.token',
];

export function createLogger(opts: { level: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      level: opts.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: 'agentplane' },
    },
    opts.destination,
  );
}
