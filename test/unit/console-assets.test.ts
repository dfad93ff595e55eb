import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fileFor, IMPORT_MAP, VENDOR_DIRS } from '../../src/console/assets.ts';

/** The console serves npm packages' folders by pattern only: the files named, nothing else of the package. */
describe('the console’s vendor folders', () => {
  it('serve Mermaid’s entry and chunks and highlight.js’s core and grammars, which exist', () => {
    for (const url of ['/vendor/mermaid/mermaid.esm.min.mjs', '/vendor/hljs/core.min.js', '/vendor/hljs/languages/typescript.min.js']) {
      const file = fileFor(url);
      expect(file, url).toBeDefined();
      expect(fs.existsSync(file!), url).toBe(true);
    }
    const chunks = fs.readdirSync(`${VENDOR_DIRS['/vendor/mermaid/']!.dir}chunks/mermaid.esm.min`).filter((f) => f.endsWith('.mjs'));
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks) expect(fileFor(`/vendor/mermaid/chunks/mermaid.esm.min/${chunk}`), chunk).toBeDefined();
    // Every chunk the entry imports is one the pattern serves.
    const entry = fs.readFileSync(fileFor('/vendor/mermaid/mermaid.esm.min.mjs')!, 'utf8');
    const imported = [...entry.matchAll(/["'](\.\/chunks\/[^"']+)["']/g)].map((m) => new URL(m[1]!, 'http://x/vendor/mermaid/').pathname);
    expect(imported.length).toBeGreaterThan(0);
    for (const url of imported) expect(fileFor(url), url).toBeDefined();
  });

  it('serve nothing else of those packages: no source maps, no other folders, no way out', () => {
    for (const url of [
      '/vendor/mermaid/mermaid.esm.min.mjs.map',
      '/vendor/mermaid/mermaid.core.mjs',
      '/vendor/mermaid/chunks/mermaid.core/chunk-X.mjs',
      '/vendor/mermaid/../package.json',
      '/vendor/mermaid/chunks/mermaid.esm.min/../../../package.json',
      '/vendor/hljs/highlight.min.js',
      '/vendor/hljs/languages/../core.js',
      '/vendor/hljs/languages/typescript.js',
      '/vendor/hljs/../package.json',
    ]) {
      expect(fileFor(url), url).toBeUndefined();
    }
  });

  it('name them in the import map', () => {
    expect(IMPORT_MAP.imports).toMatchObject({
      mermaid: '/vendor/mermaid/mermaid.esm.min.mjs',
      'hljs/core': '/vendor/hljs/core.min.js',
      'hljs/languages/': '/vendor/hljs/languages/',
    });
    for (const url of Object.values(IMPORT_MAP.imports)) if (!url.endsWith('/')) expect(fileFor(url), url).toBeDefined();
  });
});
