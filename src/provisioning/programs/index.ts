// TEMPORARY local stub until the engine branch lands (never committed).
import type { PreviewedObject, ProgramSource } from './contract.ts';
export class ProgramProblem extends Error {}
export interface ProgramEngine {
  resolve(organizationId: string, source: ProgramSource, signal: AbortSignal): Promise<string>;
  preview(
    organizationId: string,
    source: ProgramSource,
    commit: string,
    signal: AbortSignal,
  ): Promise<{ ok: true; creates: PreviewedObject[] } | { ok: false; error: string }>;
}
