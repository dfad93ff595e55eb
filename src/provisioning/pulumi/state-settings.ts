import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface PulumiStateSettings {
  /** Where stacks' state lives: any backend URL Pulumi accepts (file://, s3://, ...). */
  backendUrl: string;
  /**
   * Encrypts the secrets of stacks created with the passphrase provider (before the stack keeper);
   * never the Pulumi Cloud. Newer stacks' data keys are wrapped by the keeper instead.
   */
  passphrase: string;
}

/**
 * The backend and passphrase of computers' stacks. Defaults suit one machine: state under the
 * data directory, and a passphrase derived from the encryption key, so replicas that share the
 * key (and a backend URL) share the passphrase without configuring another secret.
 */
export function pulumiStateSettings(opts: { dataDir: string; derivePassphrase: () => string; backendUrl?: string; passphrase?: string }): PulumiStateSettings {
  return {
    backendUrl: pulumiBackendUrl(opts.dataDir, opts.backendUrl),
    passphrase: opts.passphrase ?? opts.derivePassphrase(),
  };
}

/** AGENTPLANE_PULUMI_BACKEND_URL, else the file:// backend in the data directory. */
export function pulumiBackendUrl(dataDir: string, configured?: string): string {
  return configured ?? pathToFileURL(path.join(dataDir, 'pulumi', 'state')).href;
}
