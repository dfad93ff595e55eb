import fs, { type FileHandle } from 'node:fs/promises';
import { constants as fsc, type Dir, type Stats } from 'node:fs';
import path from 'node:path/posix';
import ssh2, { type Attributes, type SFTPWrapper } from 'ssh2';

const { STATUS_CODE, OPEN_MODE } = ssh2.utils.sftp;

/** Largest READ answered at once, as OpenSSH's sftp-server caps it. */
const MAX_READ = 256 * 1024;
const READDIR_BATCH = 100;

type Handle = { kind: 'file'; file: FileHandle; queue: Promise<unknown> } | { kind: 'dir'; dir: Dir; path: string; queue: Promise<unknown> };

/** An SFTP status for a failed file system call, mapped as OpenSSH's sftp-server maps errno. */
function statusOf(err: unknown): { code: number; message: string } {
  const e = err as NodeJS.ErrnoException;
  switch (e.code) {
    case 'ENOENT':
    case 'ENOTDIR':
    case 'EBADF':
    case 'ELOOP':
      return { code: STATUS_CODE.NO_SUCH_FILE, message: e.message };
    case 'EPERM':
    case 'EACCES':
      return { code: STATUS_CODE.PERMISSION_DENIED, message: e.message };
    default:
      return { code: STATUS_CODE.FAILURE, message: e.message ?? String(err) };
  }
}

function attrsOf(s: Stats): Attributes {
  return { mode: s.mode, uid: s.uid, gid: s.gid, size: s.size, atime: Math.floor(s.atimeMs / 1000), mtime: Math.floor(s.mtimeMs / 1000) };
}

function openFlags(pflags: number): number {
  const read = (pflags & OPEN_MODE.READ) !== 0;
  const write = (pflags & OPEN_MODE.WRITE) !== 0;
  let flags = read && write ? fsc.O_RDWR : write ? fsc.O_WRONLY : fsc.O_RDONLY;
  if (pflags & OPEN_MODE.APPEND) flags |= fsc.O_APPEND;
  if (pflags & OPEN_MODE.CREAT) flags |= fsc.O_CREAT;
  if (pflags & OPEN_MODE.TRUNC) flags |= fsc.O_TRUNC;
  if (pflags & OPEN_MODE.EXCL) flags |= fsc.O_EXCL;
  return flags;
}

/** The long name `ls -l` would print; some clients show it, none parse it. */
function longnameOf(name: string, s: Stats): string {
  const type = s.isDirectory() ? 'd' : s.isSymbolicLink() ? 'l' : '-';
  const bits = 'rwxrwxrwx'.replace(/./g, (c, i: number) => (s.mode & (1 << (8 - i)) ? c : '-'));
  const date = s.mtime.toISOString().slice(0, 16).replace('T', ' ');
  return `${type}${bits} ${s.nlink} ${s.uid} ${s.gid} ${s.size} ${date} ${name}`;
}

async function applyAttrs(target: string | FileHandle, attrs: Attributes): Promise<void> {
  const onFile = typeof target !== 'string';
  if (attrs.size !== undefined) await (onFile ? target.truncate(attrs.size) : fs.truncate(target, attrs.size));
  if (attrs.mode !== undefined) await (onFile ? target.chmod(attrs.mode & 0o7777) : fs.chmod(target, attrs.mode & 0o7777));
  if (attrs.uid !== undefined && attrs.gid !== undefined) await (onFile ? target.chown(attrs.uid, attrs.gid) : fs.chown(target, attrs.uid, attrs.gid));
  if (attrs.atime !== undefined && attrs.mtime !== undefined)
    await (onFile ? target.utimes(attrs.atime, attrs.mtime) : fs.utimes(target, attrs.atime, attrs.mtime));
}

/**
 * Serves an SFTP session from the local file system, as the agent's user: the requests
 * src/ssh/sftp.ts and ssh2's client helpers send (open, read, write, stat, mkdir,
 * readdir, rename, remove, setstat, ...). Relative paths start at the home directory, as with
 * sshd. Requests on one handle run in order; different handles run concurrently.
 */
export function serveSftp(sftp: SFTPWrapper, home: string): void {
  const handles = new Map<number, Handle>();
  let nextHandle = 1;
  const resolve = (p: string) => path.resolve(home, p || '.');

  /** Runs `op`, answering OK when it returns nothing and a status when it throws. */
  const answer = (reqid: number, op: () => Promise<void | 'answered'>): Promise<void> =>
    op().then(
      (r) => {
        if (r !== 'answered') sftp.status(reqid, STATUS_CODE.OK);
      },
      (err: unknown) => {
        const { code, message } = statusOf(err);
        sftp.status(reqid, code, message);
      },
    );

  const addHandle = (h: Handle): Buffer => {
    const id = nextHandle++;
    handles.set(id, h);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(id);
    return buf;
  };
  const handleId = (buf: Buffer): number => (buf.length === 4 ? buf.readUInt32BE(0) : -1);

  /** Queues `op` behind earlier requests on the same handle; a bad handle is a FAILURE. */
  const onHandle = (reqid: number, buf: Buffer, kind: Handle['kind'], op: (h: Handle) => Promise<void | 'answered'>) => {
    const h = handles.get(handleId(buf));
    if (!h || h.kind !== kind) return sftp.status(reqid, STATUS_CODE.FAILURE, 'invalid handle');
    h.queue = h.queue.then(() => answer(reqid, () => op(h)));
  };

  sftp.on('OPEN', (reqid: number, filename: string, pflags: number, attrs: Attributes) => {
    const mode = attrs.mode === undefined ? 0o666 : attrs.mode & 0o7777;
    void answer(reqid, async () => {
      const file = await fs.open(resolve(filename), openFlags(pflags), mode);
      sftp.handle(reqid, addHandle({ kind: 'file', file, queue: Promise.resolve() }));
      return 'answered';
    });
  });

  sftp.on('READ', (reqid: number, buf: Buffer, offset: number, length: number) =>
    onHandle(reqid, buf, 'file', async (h) => {
      if (h.kind !== 'file') return;
      const data = Buffer.allocUnsafe(Math.min(length, MAX_READ));
      const { bytesRead } = await h.file.read(data, 0, data.length, offset);
      if (bytesRead === 0) {
        sftp.status(reqid, STATUS_CODE.EOF);
      } else {
        sftp.data(reqid, data.subarray(0, bytesRead));
      }
      return 'answered';
    }),
  );

  sftp.on('WRITE', (reqid: number, buf: Buffer, offset: number, packetData: Buffer) => {
    // ssh2 hands out a view of its packet buffer; the write runs later.
    const data = Buffer.from(packetData);
    onHandle(reqid, buf, 'file', async (h) => {
      if (h.kind !== 'file') return;
      for (let done = 0; done < data.length; ) {
        const { bytesWritten } = await h.file.write(data, done, data.length - done, offset + done);
        done += bytesWritten;
      }
    });
  });

  sftp.on('FSTAT', (reqid: number, buf: Buffer) =>
    onHandle(reqid, buf, 'file', async (h) => {
      if (h.kind !== 'file') return;
      sftp.attrs(reqid, attrsOf(await h.file.stat()));
      return 'answered';
    }),
  );

  sftp.on('FSETSTAT', (reqid: number, buf: Buffer, attrs: Attributes) =>
    onHandle(reqid, buf, 'file', async (h) => {
      if (h.kind === 'file') await applyAttrs(h.file, attrs);
    }),
  );

  sftp.on('CLOSE', (reqid: number, buf: Buffer) => {
    const id = handleId(buf);
    const h = handles.get(id);
    if (!h) return sftp.status(reqid, STATUS_CODE.FAILURE, 'invalid handle');
    handles.delete(id);
    h.queue = h.queue.then(() => answer(reqid, () => (h.kind === 'file' ? h.file.close() : h.dir.close())));
  });

  sftp.on('OPENDIR', (reqid: number, dirPath: string) => {
    void answer(reqid, async () => {
      const full = resolve(dirPath);
      const dir = await fs.opendir(full);
      sftp.handle(reqid, addHandle({ kind: 'dir', dir, path: full, queue: Promise.resolve() }));
      return 'answered';
    });
  });

  sftp.on('READDIR', (reqid: number, buf: Buffer) =>
    onHandle(reqid, buf, 'dir', async (h) => {
      if (h.kind !== 'dir') return;
      const names = [];
      for (let entry = await h.dir.read(); entry; entry = names.length < READDIR_BATCH ? await h.dir.read() : null) {
        const s = await fs.lstat(path.join(h.path, entry.name)).catch(() => undefined);
        if (s) names.push({ filename: entry.name, longname: longnameOf(entry.name, s), attrs: attrsOf(s) });
      }
      if (names.length === 0) sftp.status(reqid, STATUS_CODE.EOF);
      else sftp.name(reqid, names);
      return 'answered';
    }),
  );

  const statWith = (stat: (p: string) => Promise<Stats>) => (reqid: number, p: string) =>
    void answer(reqid, async () => {
      sftp.attrs(reqid, attrsOf(await stat(resolve(p))));
      return 'answered';
    });
  sftp.on(
    'STAT',
    statWith((p) => fs.stat(p)),
  );
  sftp.on(
    'LSTAT',
    statWith((p) => fs.lstat(p)),
  );

  sftp.on('SETSTAT', (reqid: number, p: string, attrs: Attributes) => void answer(reqid, () => applyAttrs(resolve(p), attrs)));

  sftp.on(
    'MKDIR',
    (reqid: number, p: string, attrs: Attributes) =>
      void answer(reqid, () => fs.mkdir(resolve(p), { mode: attrs.mode === undefined ? 0o777 : attrs.mode & 0o7777 }).then(() => undefined)),
  );
  sftp.on('RMDIR', (reqid: number, p: string) => void answer(reqid, () => fs.rmdir(resolve(p))));
  sftp.on('REMOVE', (reqid: number, p: string) => void answer(reqid, () => fs.unlink(resolve(p))));

  sftp.on(
    'RENAME',
    (reqid: number, from: string, to: string) =>
      void answer(reqid, async () => {
        // SFTP v3 rename never replaces an existing file (OpenSSH's sftp-server agrees).
        const existing = await fs.lstat(resolve(to)).catch(() => undefined);
        if (existing) throw Object.assign(new Error(`${to} already exists`), { code: 'EEXIST' });
        await fs.rename(resolve(from), resolve(to));
      }),
  );

  sftp.on(
    'REALPATH',
    (reqid: number, p: string) =>
      void answer(reqid, async () => {
        const full = resolve(p);
        // Like OpenSSH since 8.x: a path whose last part does not exist yet still resolves.
        const real = await fs.realpath(full).catch(async () => path.join(await fs.realpath(path.dirname(full)), path.basename(full)));
        sftp.name(reqid, [{ filename: real, longname: real, attrs: {} as Attributes }]);
        return 'answered';
      }),
  );

  sftp.on(
    'READLINK',
    (reqid: number, p: string) =>
      void answer(reqid, async () => {
        const target = await fs.readlink(resolve(p));
        sftp.name(reqid, [{ filename: target, longname: target, attrs: {} as Attributes }]);
        return 'answered';
      }),
  );

  sftp.on('SYMLINK', (reqid: number, linkPath: string, targetPath: string) => void answer(reqid, () => fs.symlink(targetPath, resolve(linkPath))));

  const closeAll = () => {
    for (const h of handles.values()) void h.queue.then(() => (h.kind === 'file' ? h.file.close() : h.dir.close())).catch(() => {});
    handles.clear();
  };
  sftp.on('close', closeAll);
  // ssh2 answers a client's channel close itself for every channel but SFTP ones; without this
  // the client waits for a close that never comes.
  sftp.on('end', () => {
    closeAll();
    sftp.end();
  });
  sftp.on('error', () => {});
}
