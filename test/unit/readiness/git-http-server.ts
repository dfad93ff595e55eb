import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { git } from './fixture-repo.ts';

/**
 * Serves bare repositories under `root` over git's "dumb" HTTP protocol (static files after
 * `git update-server-info`), so the evaluator clones fixture repositories the way it clones
 * remote ones: with `git clone http://...`.
 */
export async function startGitHttpServer(root: string): Promise<{ url: string; publish(dir: string, name: string): string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = path.resolve(root, `.${rel}`);
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    /** Publishes the repository at `dir` (all branches) as `<url>/<name>.git`. */
    publish(dir, name) {
      const bare = path.join(root, `${name}.git`);
      fs.rmSync(bare, { recursive: true, force: true });
      git(root, 'clone', '-q', '--bare', dir, bare);
      git(bare, 'update-server-info');
      return `${url}/${name}.git`;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
