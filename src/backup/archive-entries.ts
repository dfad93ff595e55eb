import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ArchiveUnreadable, ByteReader } from './archive-crypto.ts';

/**
 * The plain contents of a backup archive: a directory tree as a stream of records, each a
 * length-prefixed JSON header (a folder, a file and its size, or the end with the count of
 * entries) followed by a file's bytes. Only regular files and folders; paths are relative.
 */

type Header = { type: 'dir'; path: string } | { type: 'file'; path: string; size: number; mode: number } | { type: 'end'; entries: number };

function record(header: Header): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(json.length);
  return Buffer.concat([prefix, json]);
}

/** The tree under `root` as archive records, folders before their contents. */
export async function* packTree(root: string): AsyncGenerator<Buffer> {
  let entries = 0;
  async function* walk(rel: string): AsyncGenerator<Buffer> {
    for (const entry of (await readdir(path.join(root, rel), { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        entries++;
        yield record({ type: 'dir', path: child });
        yield* walk(child);
      } else if (entry.isFile()) {
        const file = path.join(root, child);
        const { size, mode } = await stat(file);
        entries++;
        yield record({ type: 'file', path: child, size, mode: mode & 0o777 });
        let sent = 0;
        if (size === 0) continue;
        for await (const chunk of createReadStream(file, { end: size - 1, highWaterMark: 1 << 20 })) {
          sent += (chunk as Buffer).length;
          yield chunk as Buffer;
        }
        if (sent !== size) throw new Error(`${file} changed size while it was archived`);
      }
    }
  }
  yield* walk('');
  yield record({ type: 'end', entries });
}

/** Writes the records of `plain` under `root` (which must exist); throws ArchiveUnreadable when they stop short. */
export async function unpackTree(plain: AsyncIterable<Buffer>, root: string): Promise<number> {
  const reader = new ByteReader(plain);
  const within = (rel: string) => {
    const target = path.resolve(root, rel);
    if (!target.startsWith(path.resolve(root) + path.sep)) throw new ArchiveUnreadable(`the archive names a path outside its folder: ${rel}`);
    return target;
  };
  let entries = 0;
  for (;;) {
    const prefix = await reader.read(4);
    if (prefix.length < 4) throw new ArchiveUnreadable('the archive is truncated: its contents end early');
    const raw = await reader.read(prefix.readUInt32BE(0));
    let header: Header;
    try {
      header = JSON.parse(raw.toString('utf8')) as Header;
    } catch {
      throw new ArchiveUnreadable('the archive is damaged: an entry cannot be read');
    }
    if (header.type === 'end') {
      if (header.entries !== entries) throw new ArchiveUnreadable(`the archive is damaged: ${entries} entries of ${header.entries}`);
      return entries;
    }
    entries++;
    if (header.type === 'dir') {
      await mkdir(within(header.path), { recursive: true, mode: 0o700 });
      continue;
    }
    const file = await open(within(header.path), 'wx', header.mode & 0o700);
    try {
      for (let left = header.size; left > 0; ) {
        const chunk = await reader.read(Math.min(left, 1 << 20));
        if (chunk.length === 0) throw new ArchiveUnreadable('the archive is truncated: its contents end early');
        await file.write(chunk);
        left -= chunk.length;
      }
    } finally {
      await file.close();
    }
  }
}
