/** AGENTPLANE_BACKUP_PASSPHRASE: archives are encrypted with it and never written in clear. */
export function backupPassphrase(): string {
  const value = process.env.AGENTPLANE_BACKUP_PASSPHRASE;
  if (!value) throw new Error('AGENTPLANE_BACKUP_PASSPHRASE is not set: archives are always encrypted with a passphrase you keep');
  if (value.length < 12) throw new Error('AGENTPLANE_BACKUP_PASSPHRASE must be at least 12 characters');
  return value;
}
