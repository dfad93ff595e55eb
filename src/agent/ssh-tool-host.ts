import path from 'node:path/posix';
import { SshTimeout, type SshClient, type SshTarget } from '../provisioning/ssh/index.ts';
import { ExecTimedOut, lsListing, type ToolHost } from './tool-host.ts';

/** A session's computer as the agent's host: commands and files over the control plane's SSH client. */
export function sshToolHost(ssh: SshClient, target: SshTarget, cwd: string): ToolHost {
  // Connecting can time out too, for files as for commands: every call reports it the same way.
  const timeouts = <T>(call: Promise<T>): Promise<T> =>
    call.catch((err: unknown) => {
      throw err instanceof SshTimeout ? new ExecTimedOut(err.message, { cause: err }) : err;
    });
  return {
    cwd,
    exec: (command, opts = {}) => timeouts(ssh.exec(target, command, { ...opts, cwd: opts.cwd ?? cwd })),
    readFile: (file, opts) => timeouts(ssh.readFile(target, file, opts)),
    writeFile: (file, content, opts) =>
      timeouts(
        (async () => {
          await ssh.mkdirp(target, path.dirname(file), opts);
          await ssh.writeFile(target, file, content, opts);
        })(),
      ),
    stat: (file, opts) => timeouts(ssh.stat(target, file, opts).then((st) => st && { size: st.size, isFile: st.isFile, isDirectory: st.isDirectory })),
    list: (dir, opts) => lsListing((command, o) => timeouts(ssh.exec(target, command, o)), dir, opts?.signal),
  };
}
