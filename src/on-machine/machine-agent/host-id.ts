import fs from 'node:fs/promises';
import { newUuid } from '../../lib/ids.ts';
import { hexToUuid } from '../../ssh/machine-id.ts';
import type { AgentStateDir } from './state.ts';

const MACHINE_ID_FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id'];

/**
 * This machine's `hostId`: its systemd/D-Bus machine id as a UUID, exactly as the control plane
 * derives it over SSH for directly registered machines (machine-id.ts), so both ways of
 * registering one machine agree. Without a machine id, a random UUID kept in the state directory.
 */
export async function localHostId(state: AgentStateDir, files: readonly string[] = MACHINE_ID_FILES): Promise<string> {
  for (const file of files) {
    const id = (await fs.readFile(file, 'utf8').catch(() => '')).trim().toLowerCase();
    if (/^[0-9a-f]{32}$/.test(id)) return hexToUuid(id);
  }
  const { fallbackHostId } = await state.read();
  if (fallbackHostId) return fallbackHostId;
  const id = newUuid();
  await state.update({ fallbackHostId: id });
  return id;
}
