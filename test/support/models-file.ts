import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FileModel } from '../../src/agent/models.ts';
import type { ModelServer } from './model-server.ts';

/** The environment variable the `coder` model names for the scripted model's API key. */
export const CODER_KEY_ENV = 'AGENTPLANE_TEST_CODER_KEY';

/** `coder`: the scripted model server at 1000 credits per million input tokens and 5000 per million output tokens. */
export function coderModel(model: ModelServer): FileModel {
  return {
    id: 'coder',
    provider: 'openai-compatible',
    baseUrl: model.baseUrl,
    apiKeyEnv: CODER_KEY_ENV,
    upstreamModel: 'upstream-coder',
    pricing: { inputPerMTok: 1000, outputPerMTok: 5000 },
  };
}

/**
 * Writes a models file (AGENTPLANE_MODELS_FILE) in a temporary directory. Returns the environment
 * a server needs to use it (`keys`: the API keys its models' `apiKeyEnv` name).
 */
export function writeModelsFile(models: FileModel[], keys: Record<string, string> = {}): { env: Record<string, string>; dispose(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-models-'));
  const file = path.join(dir, 'models.json');
  fs.writeFileSync(file, JSON.stringify({ models }));
  return { env: { AGENTPLANE_MODELS_FILE: file, ...keys }, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
