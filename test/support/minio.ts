import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import aws4 from 'aws4';
import { freePort } from './http.ts';
import { waitFor } from './wait.ts';

const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/minio-toolchain.sh');

/** The MinIO binary scripts/minio-toolchain.sh builds, if it has been built on this machine. */
export function minioBinary(): string | undefined {
  if (process.env.AGENTPLANE_MINIO_BIN) return process.env.AGENTPLANE_MINIO_BIN;
  const version = /AGENTPLANE_MINIO_VERSION:-([^}]+)\}/.exec(fs.readFileSync(SCRIPT, 'utf8'))?.[1];
  const bin = path.join(process.env.AGENTPLANE_MINIO_HOME ?? path.join(os.homedir(), '.cache/agentplane/minio'), version ?? '', 'minio');
  return fs.existsSync(bin) ? bin : undefined;
}

export interface Minio {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** A signed request to the store, as the tests' own S3 client. */
  request(method: string, p: string): Promise<Response>;
  stop(): Promise<void>;
}

/** A real MinIO server on a loopback port with a throwaway data directory. */
export async function startMinio(bin: string): Promise<Minio> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-minio-'));
  const port = await freePort();
  const creds = { accessKeyId: 'agentplane-test', secretAccessKey: 'agentplane-test-secret' };
  const child: ChildProcess = spawn(bin, ['server', '--quiet', '--address', `127.0.0.1:${port}`, dir], {
    env: { ...process.env, MINIO_ROOT_USER: creds.accessKeyId, MINIO_ROOT_PASSWORD: creds.secretAccessKey, MINIO_BROWSER: 'off' },
    stdio: 'ignore',
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const request = (method: string, p: string) => {
    const signed = aws4.sign({ host: `127.0.0.1:${port}`, path: p, method, service: 's3', region: 'us-east-1', headers: {} }, creds);
    return fetch(`${endpoint}${signed.path}`, { method, headers: signed.headers as Record<string, string> });
  };
  // Live is not ready: until its object layer is up, MinIO answers S3 requests 503. A bucket listing is the proof.
  await waitFor('MinIO to serve S3', async () => (await request('GET', '/').catch(() => undefined))?.status === 200, 30_000, 100);
  return {
    endpoint,
    ...creds,
    region: 'us-east-1',
    request,
    stop: async () => {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
