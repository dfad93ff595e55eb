import type { Client, ClientChannel, Connection, PseudoTtyInfo, ServerChannel, Session } from 'ssh2';
import { splice } from '../lib/splice.ts';

/**
 * Carries a person's SSH connection (from `agentplane ssh` or OpenSSH through `--stdio`) to the
 * control plane's own connection to the machine, channel by channel: sessions (shell with or
 * without a terminal, exec, subsystems such as sftp, with their env, window changes and signals)
 * and direct-tcpip channels (port forwarding). The machine's SSH server decides what it allows.
 */
export function bridgeChannels(person: Connection, machine: Client): void {
  person.on('session', (accept) => bridgeSession(accept(), machine));
  person.on('tcpip', (accept, reject, info) => {
    machine.forwardOut(info.srcIP, info.srcPort, info.destIP, info.destPort, (err, channel) => {
      if (err) return reject();
      splice(accept(), channel);
    });
  });
}

function bridgeSession(session: Session, machine: Client): void {
  const env: Record<string, string> = {};
  let pty: PseudoTtyInfo | undefined;
  let upstream: ClientChannel | undefined;
  // Accepted at once: the client may send data right behind its request (SFTP's init does), and
  // ssh2 drops data that arrives before the channel exists. A failure upstream then ends the
  // channel with an error, as sshd does when it cannot start a command.
  const opened = (accept: () => ServerChannel | undefined) => {
    const person = accept();
    return (err: Error | undefined, channel: ClientChannel) => {
      if (!person) return channel?.close();
      if (err) {
        person.stderr.write(`agentplane relay: the machine refused the session: ${err.message}\r\n`);
        person.exit(255);
        return person.end();
      }
      upstream = channel;
      join(person, channel);
    };
  };

  session.on('env', (accept, _reject, info) => {
    env[info.key] = info.val;
    accept?.();
  });
  session.on('pty', (accept, _reject, info) => {
    pty = info;
    accept?.();
  });
  session.on('window-change', (accept, _reject, info) => {
    upstream?.setWindow(info.rows, info.cols, info.height, info.width);
    accept?.();
  });
  session.on('signal', (accept, _reject, info) => {
    upstream?.signal(info.name);
    accept?.();
  });
  session.on('shell', (accept) => machine.shell(pty ?? false, { env }, opened(accept)));
  session.on('exec', (accept, _reject, info) => machine.exec(info.command, { env, pty }, opened(accept)));
  session.on('subsystem', (accept, _reject, info) => machine.subsys(info.name, opened(accept)));
}

/** One session channel both ways; the exit status (or signal) is passed on after the last output. */
function join(person: ServerChannel, machine: ClientChannel): void {
  let exit: (() => void) | undefined;
  machine.on('exit', (code: number | null, signal?: string, coreDumped?: boolean, description?: string) => {
    exit = code !== null && code !== undefined ? () => person.exit(code) : () => person.exit(signal ?? 'KILL', coreDumped ?? false, description ?? '');
  });
  machine.pipe(person, { end: false });
  machine.stderr.pipe(person.stderr, { end: false });
  person.pipe(machine);
  person.on('error', () => {});
  machine.on('error', () => {});
  machine.once('close', () => {
    // The empty write's callback runs once everything written before it has gone out.
    person.write('', () => {
      exit?.();
      person.end();
    });
  });
  person.once('close', () => machine.close());
}
