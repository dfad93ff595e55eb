import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/http/openapi.ts';
import { expressPath } from '../../src/http/route.ts';
import { appWithoutDatabase } from '../support/route-table.ts';

type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } };

/** Every (METHOD path) Express will actually dispatch, found by walking its router stack. */
function servedRoutes(stack: Layer[]): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) return Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path}`);
    return layer.handle?.stack ? servedRoutes(layer.handle.stack) : [];
  });
}

describe('OpenAPI document', async () => {
  const { app, routes } = await appWithoutDatabase();

  it('documents exactly the routes the app serves', async () => {
    const res = await new Promise<Record<string, Record<string, unknown>>>((resolve, reject) => {
      const server = app.listen(0, '127.0.0.1', async () => {
        try {
          const { port } = server.address() as { port: number };
          const r = await fetch(`http://127.0.0.1:${port}/api/v0/openapi.json`);
          resolve(((await r.json()) as { paths: Record<string, Record<string, unknown>> }).paths);
        } catch (e) {
          reject(e);
        } finally {
          server.close();
        }
      });
    });
    const documented = Object.entries(res).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${expressPath(path)}`));
    const served = servedRoutes((app as unknown as { router: { stack: Layer[] } }).router.stack);
    expect(served.length).toBeGreaterThan(0);
    expect(new Set(documented)).toEqual(new Set(served));
  });

  it('declares version 0.1.0, bearer auth and the error body on every operation', async () => {
    const doc = buildOpenApiDocument(routes) as unknown as {
      info: { version: string };
      components: { securitySchemes: Record<string, unknown> };
      paths: Record<string, Record<string, { responses: Record<string, unknown>; operationId: string }>>;
    };
    expect(doc.info.version).toBe('0.1.0');
    expect(doc.components.securitySchemes.BearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) expect(op.responses['500']).toBeDefined();
    }
  });
});
