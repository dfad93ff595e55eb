import { setTimeout as sleep } from 'node:timers/promises';
import yauzl from 'yauzl';

/** Polls a run until it leaves queued/running. */
/** Anything that calls the API as a credential: the test API, or a benchmark's server. */
export interface CallsApi {
  call(method: string, path: string, opts?: { as?: string }): Promise<{ status: number; body: any }>;
}

export async function waitForRun(api: CallsApi, id: string, as: string, timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api.call('GET', `/api/v0/wiki/${id}`, { as });
    if (res.status !== 200) throw new Error(`GET run ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
    if (Date.now() > deadline) throw new Error(`run ${id} still ${res.body.status} after ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** The entries of a zip, name -> content, read with a real unzip library. */
export function unzip(buffer: Buffer): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const files = new Map<string, string>();
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            files.set(entry.fileName, Buffer.concat(chunks).toString('utf8'));
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(files));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}
