import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import { createAssetCache, fileFor, IMPORT_MAP, moduleGraph } from './assets.ts';

const IMPORT_MAP_SCRIPT = JSON.stringify(IMPORT_MAP);
const IMPORT_MAP_HASH = crypto.createHash('sha256').update(IMPORT_MAP_SCRIPT).digest('base64');

/**
 * The console holds a credential in the page's session storage, so nothing but its own files may
 * run there: scripts from this origin only (and the one inline import map, by hash), requests to
 * this origin only, never framed. Inline styles stay allowed: the chart library sizes with them.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  `script-src 'self' 'sha256-${IMPORT_MAP_HASH}'`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/**
 * Serves the web console: `/` (the shell), its sources under `/console/` and the typed client's
 * under `/clients/typescript/src/`, and a fixed list of npm modules under `/vendor/`. Mounted
 * after the API's routes, so an API path always wins; anything it does not serve falls through
 * to the API's 404.
 */
export function serveConsole(): RequestHandler {
  // The shell's modules and those of the page most visits land on (computers), preloaded together.
  const preloads = () =>
    moduleGraph(['/console/src/main.ts', '/console/src/pages/computers.ts'])
      .map((url) => `<link rel="modulepreload" href="${url}" />`)
      .join('\n    ');
  const load = createAssetCache((html) => html.replace('<!--importmap-->', `<script type="importmap">${IMPORT_MAP_SCRIPT}</script>\n    ${preloads()}`));
  return async (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const file = fileFor(req.path);
    const asset = file ? await load(file) : undefined;
    if (!asset) return next();
    res.setHeader('Content-Type', asset.type);
    res.setHeader('ETag', asset.etag);
    res.setHeader('Vary', 'Accept-Encoding');
    // Unversioned URLs: the browser keeps a copy and revalidates it (a 304 costs no body).
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    if (asset.type.startsWith('text/html')) res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    if (req.headers['if-none-match'] === asset.etag) {
      res.status(304).end();
      return;
    }
    const accepts = String(req.headers['accept-encoding'] ?? '');
    let body = asset.identity;
    if (/\bbr\b/.test(accepts)) {
      res.setHeader('Content-Encoding', 'br');
      body = asset.br;
    } else if (/\bgzip\b/.test(accepts)) {
      res.setHeader('Content-Encoding', 'gzip');
      body = asset.gzip;
    }
    res.setHeader('Content-Length', body.length);
    res.status(200).end(req.method === 'HEAD' ? undefined : body);
  };
}
