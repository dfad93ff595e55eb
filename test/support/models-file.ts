import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ModelServer } from './model-server.ts';

/** The environment variable the test models file names for the scripted model's API key. */
export const CODER_KEY_ENV = 'AGENTPLANE_TEST_CODER_KEY';

/**
 * A models file (AGENTPLANE_MODELS_FILE) with one model, `coder`, served by the scripted model
 * server at 1000 credits per million input tokens and 5000 per million output tokens. Returns
 * the environment a server needs to call it.
 */
export function writeModelsFile(model: ModelServer): { env: Record<string, string>; dispose(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-models-'));
  const file = path.join(dir, 'models.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      models: [
        {
          id: 'coder',
          provider: 'openai-compatible',
          baseUrl: model.baseUrl,
          apiKeyEnv: CODER_KEY_ENV,
          upstreamModel: 'upstream-coder',
          pricing: { inputPerMTok: 1000, outputPerMTok: 5000 },
        },
      ],
    }),
  );
  return { env: { AGENTPLANE_MODELS_FILE: file, [CODER_KEY_ENV]: model.apiKey }, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
