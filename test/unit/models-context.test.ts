import { afterAll, describe, expect, it } from 'vitest';
import { fileModels, resolveModel } from '../../src/agent/models.ts';
import { writeModelsFile } from '../support/models-file.ts';

const base = { provider: 'openai-compatible' as const, baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'CTX_KEY' };

describe("models' context windows", () => {
  const files: { dispose(): void }[] = [];
  afterAll(() => files.forEach((f) => f.dispose()));
  const file = (models: Parameters<typeof writeModelsFile>[0]) => {
    const written = writeModelsFile(models);
    files.push(written);
    return written.env.AGENTPLANE_MODELS_FILE!;
  };

  it('hands contextWindow and maxOutputTokens of the models file and of custom models to the model client', () => {
    const path = file([{ id: 'small', ...base, contextWindow: 32_768, maxOutputTokens: 4_096 }]);
    const saved = process.env.AGENTPLANE_MODELS_FILE;
    process.env.AGENTPLANE_MODELS_FILE = path;
    try {
      expect(resolveModel('small', {}, { CTX_KEY: 'k' }, fetch).config).toMatchObject({ contextWindow: 32_768, maxOutputTokens: 4_096 });
      const custom = { customModels: [{ id: 'mine', model: 'qwen', baseUrl: 'http://x/v1', contextWindow: 65_536, maxOutputTokens: 2_048 }] };
      expect(resolveModel('custom:mine', custom, {}, fetch).config).toMatchObject({ contextWindow: 65_536, maxOutputTokens: 2_048 });
    } finally {
      process.env.AGENTPLANE_MODELS_FILE = saved;
    }
  });

  it('refuses an output reserve over half the window, naming the file and the field', () => {
    const path = file([{ id: 'greedy', ...base, contextWindow: 8_000, maxOutputTokens: 6_000 }]);
    expect(() => fileModels(path)).toThrow(/maxOutputTokens may take at most half of contextWindow/);
    expect(() => fileModels(path)).toThrow(path);
  });
});
