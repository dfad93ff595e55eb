import { z } from 'zod';
import { KINDS } from './kinds/catalog.ts';
import { DocumentEnvelope } from './schemas.ts';

let cached: unknown;

/** A JSON Schema of every kind's document, for editors (`# yaml-language-server: $schema=...`). */
export function documentJsonSchema(): unknown {
  cached ??= (() => {
    const documents = KINDS.map((k) => DocumentEnvelope.extend({ kind: z.literal(k.kind), spec: k.spec }));
    const schema = z.toJSONSchema(z.union(documents as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]]), { io: 'input', unrepresentable: 'any' });
    return { ...schema, title: 'agentplane configuration document' };
  })();
  return cached;
}
