import os from 'node:os';
import type { ClientChannel, PseudoTtyOptions } from 'ssh2';
import { credentialsFrom } from './computer.ts';
import { openComputerRelay, type RelayStream } from './relay-stream.ts';

export interface SshCommandOptions {
  url?: string;
  apiKey?: string;
  /** Only carry the SSH connection on stdin and stdout, as an OpenSSH ProxyCommand. */
  stdio?: boolean;
}

/** What `ssh` answers when the connection itself failed, so scripts can tell it from the command's status. */
const CONNECTION_FAILED = 255;

const log = (line: string) => process.stderr.write(`agentplane: ${line}\n`);

/**
 * `agentplane ssh <computer> [-- command...]`: an interactive shell (on a terminal when stdin is
 * one), or one command whose exit status becomes this process's; `--stdio` only carries the SSH
 * connection, for `ssh -o ProxyCommand=...`, `scp`, `rsync` and editors. Resolves with the exit code.
 */
export async function runSshCommand(nameOrId: string, command: string[], opts: SshCommandOptions): Promise<number> {
  const creds = credentialsFrom(opts);
  if (opts.stdio) {
    if (command.length) throw new Error('--stdio carries an SSH connection for another client; run the command with that client');
    return carryStdio((await openComputerRelay(creds, nameOrId)).relay);
  }
  // ssh2 only here: `--stdio` (every scp and ProxyCommand) starts without loading it.
  const { openRelaySession } = await import('./relay-session.ts');
  const session = await openRelaySession(creds, nameOrId);
  const interactive = command.length === 0;
  const tty = interactive && process.stdin.isTTY && process.stdout.isTTY;
  let status: number | undefined;
  const opening = new Promise<{ channel: ClientChannel; closed: Promise<void> } | string>((resolve) => {
    const done = (err: Error | undefined, ch: ClientChannel) => {
      if (err) return resolve(whyRefused(err, session.ended));
      // Watched at once: a quick command's exit and close can come in the same read as the
      // channel's confirmation, before anything awaiting it runs.
      ch.on('exit', (code: number | null, signal?: string) => {
        status = code ?? 128 + (os.constants.signals[`SIG${signal}` as NodeJS.Signals] ?? 0);
      });
      resolve({ channel: ch, closed: new Promise<void>((settle) => ch.once('close', () => settle())) });
    };
    if (interactive) session.client.shell(tty ? terminal() : false, done);
    else session.client.exec(command.join(' '), done);
  });
  // ssh2 may never answer a request whose connection died meanwhile: the session's end decides then.
  const opened = await Promise.race([opening, session.ended]);
  if (typeof opened === 'string') {
    log(`${session.computer.name}: ${opened}`);
    return CONNECTION_FAILED;
  }
  const { channel, closed } = opened;

  channel.pipe(process.stdout, { end: false });
  channel.stderr.pipe(process.stderr, { end: false });
  if (tty) {
    process.stdin.setRawMode(true);
    process.stdout.on('resize', () => channel.setWindow(process.stdout.rows, process.stdout.columns, 0, 0));
  }
  process.stdin.pipe(channel);

  const reason = await Promise.race([closed.then(() => undefined), session.ended]);
  if (tty) process.stdin.setRawMode(false);
  process.stdin.unpipe(channel);
  session.client.end();
  if (status !== undefined) return status;
  log(`${session.computer.name}: ${reason ?? (await session.ended)}`);
  return CONNECTION_FAILED;
}

/**
 * A refused channel request. ssh2 refuses the pending request ("No response from server") when the
 * connection closes under it, before the relay's close reason arrives; so the session's end, if it
 * comes at once, is the truer answer (the key was revoked, the computer deleted).
 */
function whyRefused(err: Error, ended: Promise<string>): Promise<string> {
  const refused = `the computer refused the session: ${err.message}`;
  return Promise.race([ended, new Promise<string>((resolve) => setTimeout(resolve, 1_000, refused).unref())]);
}

function terminal(): PseudoTtyOptions {
  return { term: process.env.TERM ?? 'xterm-256color', rows: process.stdout.rows, cols: process.stdout.columns, width: 0, height: 0 };
}

/** ProxyCommand mode: stdin to the relay, the relay to stdout, until either side ends. */
async function carryStdio(relay: RelayStream): Promise<number> {
  process.stdin.pipe(relay.stream);
  relay.stream.pipe(process.stdout);
  process.stdin.once('end', () => relay.stream.end());
  const reason = await relay.ended;
  if (reason.startsWith('the relay ended')) {
    log(reason);
    return CONNECTION_FAILED;
  }
  return 0;
}
