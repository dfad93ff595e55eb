import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire, stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The URL prefixes the console is served from, each a folder of this repository. Sources are
 * TypeScript served as JavaScript with their types stripped (positions kept, so the browser's
 * devtools show the very lines of the file); no build step, no build artefact.
 */
const SOURCE_ROOTS: Record<string, string> = {
  '/console/': path.join(REPO_ROOT, 'console/'),
  '/clients/typescript/src/': path.join(REPO_ROOT, 'clients/typescript/src/'),
};

/**
 * Browser modules of npm packages the console imports, by URL. Only these files are served:
 * node_modules is never exposed as a folder.
 */
const require = createRequire(import.meta.url);
function packageDir(name: string): string {
  try {
    return path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    // Not every package exports its package.json: walk up from its entry point instead.
  }
  let dir = path.dirname(require.resolve(name));
  while (!fs.existsSync(path.join(dir, 'package.json')) || JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== name) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`the console's module ${name} is not installed; run npm install`);
    dir = parent;
  }
  return dir;
}
const VENDOR_FILES: Record<string, string> = {
  '/vendor/preact.js': path.join(packageDir('preact'), 'dist/preact.mjs'),
  '/vendor/preact-hooks.js': path.join(packageDir('preact'), 'hooks/dist/hooks.mjs'),
  '/vendor/htm.js': path.join(packageDir('htm'), 'dist/htm.mjs'),
  '/vendor/openapi-fetch.js': path.join(packageDir('openapi-fetch'), 'dist/index.mjs'),
  '/vendor/eventsource-parser/index.js': path.join(packageDir('eventsource-parser'), 'dist/index.js'),
  '/vendor/eventsource-parser/parse.js': path.join(packageDir('eventsource-parser'), 'dist/parse.js'),
  '/vendor/eventsource-parser/errors.js': path.join(packageDir('eventsource-parser'), 'dist/errors.js'),
  '/vendor/uplot.js': path.join(packageDir('uplot'), 'dist/uPlot.esm.js'),
  '/vendor/uplot.css': path.join(packageDir('uplot'), 'dist/uPlot.min.css'),
  '/vendor/marked.js': path.join(packageDir('marked'), 'lib/marked.esm.js'),
  '/vendor/dompurify.js': path.join(packageDir('dompurify'), 'dist/purify.es.mjs'),
};

/**
 * npm packages served as a folder of modules (their code-split chunks, grammars loaded one by
 * one): only the files a pattern names, nothing else of the package.
 */
export const VENDOR_DIRS: Record<string, { dir: string; files: RegExp }> = {
  // Mermaid's browser build: an entry module and the chunks it imports (each diagram type its own).
  '/vendor/mermaid/': { dir: path.join(packageDir('mermaid'), 'dist/'), files: /^(mermaid\.esm\.min\.mjs|chunks\/mermaid\.esm\.min\/[A-Za-z0-9_-]+\.mjs)$/ },
  // highlight.js's ES-module builds: the core and one grammar per language, loaded as a page needs them.
  '/vendor/hljs/': { dir: path.join(packageDir('@highlightjs/cdn-assets'), 'es/'), files: /^(core\.min\.js|languages\/[a-z0-9_-]+\.min\.js)$/ },
};

/** The import map of index.html: bare specifiers of the sources to the files above. */
export const IMPORT_MAP = {
  imports: {
    preact: '/vendor/preact.js',
    'preact/hooks': '/vendor/preact-hooks.js',
    htm: '/vendor/htm.js',
    'openapi-fetch': '/vendor/openapi-fetch.js',
    'eventsource-parser': '/vendor/eventsource-parser/index.js',
    uplot: '/vendor/uplot.js',
    marked: '/vendor/marked.js',
    dompurify: '/vendor/dompurify.js',
    mermaid: '/vendor/mermaid/mermaid.esm.min.mjs',
    'hljs/core': '/vendor/hljs/core.min.js',
    'hljs/languages/': '/vendor/hljs/languages/',
  },
};

const TYPES: Record<string, string> = {
  '.ts': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export interface Asset {
  type: string;
  etag: string;
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
}

/** Node's type stripper warns once that it is experimental; the console's sources only need its stable `strip` mode. */
function stripTypes(source: string): string {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);
/**
 * Brotli's best quality only for small files (the console's own modules): above it quality 7 is
 * ~40x faster for ~9% more bytes. Mermaid's 106 files (5.4 MB) cost 7.9 s of CPU at 11 and 0.7 s
 * this way, and a page's first diagram waits for them: on a busy machine, for more than a minute.
 */
const BEST_QUALITY_MAX_BYTES = 32 * 1024;

/** Compresses on libuv's thread pool: a large file's first request never stalls the API's event loop. */
async function encode(type: string, body: Buffer): Promise<Asset> {
  const quality = body.length <= BEST_QUALITY_MAX_BYTES ? 11 : 7;
  const [gz, br] = await Promise.all([gzip(body, { level: 9 }), brotli(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: quality } })]);
  return { type, etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, identity: body, gzip: gz, br };
}

/**
 * Loads, transforms and compresses files once each; a file changed on disk (a developer editing
 * the console) is read again on its next request.
 */
export function createAssetCache(transformHtml: (html: string) => string) {
  const cache = new Map<string, { mtimeMs: number; asset: Promise<Asset> }>();
  return (file: string): Promise<Asset> | undefined => {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      return undefined;
    }
    if (!stat.isFile()) return undefined;
    const hit = cache.get(file);
    if (hit && hit.mtimeMs === stat.mtimeMs) return hit.asset;
    const ext = path.extname(file);
    const type = TYPES[ext];
    if (!type) return undefined;
    let body = fs.readFileSync(file);
    if (ext === '.ts') body = Buffer.from(stripTypes(body.toString('utf8')));
    if (ext === '.html') body = Buffer.from(transformHtml(body.toString('utf8')));
    const asset = encode(type, body);
    cache.set(file, { mtimeMs: stat.mtimeMs, asset });
    // A failed compression is not kept: the next request tries again.
    asset.catch(() => cache.get(file)?.asset === asset && cache.delete(file));
    return asset;
  };
}

const STATIC_IMPORT = /^\s*(?:import|export)\s+(?!type\b)(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;

/**
 * The URLs of the modules `entries` import statically, transitively, in the order found: the
 * shell lists them as modulepreload links, so the browser fetches the whole graph at once
 * instead of discovering it one import at a time.
 */
export function moduleGraph(entries: string[]): string[] {
  const seen = new Set<string>();
  const visit = (url: string) => {
    if (seen.has(url)) return;
    seen.add(url);
    const file = fileFor(url);
    if (!file || !/\.(ts|js|mjs)$/.test(file) || !fs.existsSync(file)) return;
    for (const match of fs.readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      const specifier = match[1]!;
      const mapped = (IMPORT_MAP.imports as Record<string, string>)[specifier];
      visit(mapped ?? new URL(specifier, `http://console${url}`).pathname);
    }
  };
  entries.forEach(visit);
  return [...seen].filter((url) => fileFor(url) !== undefined);
}

/** The file a console URL names, or undefined when it names none (outside the served folders too). */
export function fileFor(urlPath: string): string | undefined {
  if (urlPath === '/' || urlPath === '/index.html') return path.join(REPO_ROOT, 'console/index.html');
  const vendor = VENDOR_FILES[urlPath];
  if (vendor) return vendor;
  for (const [prefix, { dir, files }] of Object.entries(VENDOR_DIRS)) {
    if (urlPath.startsWith(prefix) && files.test(urlPath.slice(prefix.length))) return path.join(dir, urlPath.slice(prefix.length));
  }
  for (const [prefix, root] of Object.entries(SOURCE_ROOTS)) {
    if (!urlPath.startsWith(prefix)) continue;
    const file = path.resolve(root, '.' + urlPath.slice(prefix.length - 1));
    return file.startsWith(root) ? file : undefined;
  }
  return undefined;
}
