import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Computer } from '../../../generated/prisma/client.ts';
import { shellQuote, type SshTarget } from '../../../ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { targetFor } from '../machines.ts';
import { WORKSPACE_DIR } from './workspace.ts';

const TAR_TIMEOUT_MS = 30 * 60_000;

/**
 * Copies `~/workspace` of another computer into this one's, through the control plane: a tar
 * archive made on the source at `archive`, downloaded, uploaded there on the target and unpacked.
 * Answers the source's cloned directories as they are on the target.
 */
export async function copyWorkspace(
  deps: ComputerJobDeps,
  from: Computer,
  to: { target: SshTarget; home: string },
  archive: string,
  signal: AbortSignal,
): Promise<string[]> {
  const source = await targetFor(deps, from);
  const local = await mkdtemp(path.join(os.tmpdir(), 'agentplane-copy-'));
  try {
    const pack = await deps.ssh.exec(
      source,
      `cd "$HOME" && mkdir -p ${WORKSPACE_DIR} && printf '%s\\n' "$HOME" && tar -czf ${shellQuote(archive)} ${WORKSPACE_DIR}`,
      // Packing or unpacking cut off from the control plane is run again by the step's retry, on the same archive.
      { signal, timeoutMs: TAR_TIMEOUT_MS, endWithConnection: true },
    );
    if (pack.exitCode !== 0) throw new Error(`packing the workspace of "${from.name}" failed: ${pack.stderr.trim()}`);
    const sourceHome = pack.stdout.trim();
    const file = path.join(local, 'workspace.tgz');
    await deps.ssh.downloadFile(source, archive, file, { signal });
    await deps.ssh.exec(source, `rm -f ${shellQuote(archive)}`, { signal, timeoutMs: 60_000 });
    await deps.ssh.uploadFile(to.target, file, archive, { signal });
    const unpack = await deps.ssh.exec(to.target, `cd "$HOME" && tar -xzf ${shellQuote(archive)}; status=$?; rm -f ${shellQuote(archive)}; exit $status`, {
      signal,
      timeoutMs: TAR_TIMEOUT_MS,
      endWithConnection: true,
    });
    if (unpack.exitCode !== 0) throw new Error(`unpacking the workspace failed: ${unpack.stderr.trim()}`);
    return from.clonedRepoDirectories.filter((d) => d.startsWith(`${sourceHome}/`)).map((d) => `${to.home}${d.slice(sourceHome.length)}`);
  } finally {
    await rm(local, { recursive: true, force: true });
  }
}
