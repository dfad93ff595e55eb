import tty from 'node:tty';
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** Paths whose values never reach a log line: credentials, keys, tokens, passwords. */
const REDACTED_PATHS = [
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

type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level: string;
  /** Unset: readable lines when the log's file descriptor is a terminal, JSON lines otherwise. */
  format?: LogFormat;
  /** 1 (stdout, the default) or 2 (stderr: commands whose stdout is their answer). */
  fd?: 1 | 2;
  /** A stream instead of a file descriptor (tests). */
  destination?: pino.DestinationStream;
}

export function createLogger(opts: LoggerOptions): Logger {
  const fd = opts.fd ?? 1;
  const format = opts.format ?? (tty.isatty(fd) ? 'pretty' : 'json');
  // Redaction runs in pino before either stream sees a line, so both formats hide credentials.
  const destination =
    opts.destination ??
    (format === 'pretty'
      ? pretty({ destination: fd, sync: true, colorize: tty.isatty(fd), ignore: 'pid,hostname,service', translateTime: 'SYS:HH:MM:ss.l' })
      : pino.destination({ dest: fd, sync: true }));
  return pino(
    {
      level: opts.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: 'agentplane' },
    },
    destination,
  );
}
