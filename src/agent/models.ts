import fs from 'node:fs';
import { z } from 'zod';
import type { ModelConfig } from './model-client.ts';
import { ModelPricingSchema, type ModelPricing } from './pricing.ts';

/** One model from the models file (`AGENTPLANE_MODELS_FILE`). */
const FileModelSchema = z.object({
  id: z.string().min(1),
  provider: z.enum(['openai-compatible', 'anthropic']),
  baseUrl: z.url(),
  /** Names the environment variable that holds the API key; the key itself never sits in the file. */
  apiKeyEnv: z.string().min(1),
  upstreamModel: z.string().min(1).optional(),
  /** Input and output tokens per call together; default per provider (context-limits.ts). */
  contextWindow: z.int().min(1_024).optional(),
  /** Output tokens each call may produce, reserved out of the window; default per provider. */
  maxOutputTokens: z.int().min(256).optional(),
  /** Service credits per million tokens of each kind. */
  pricing: z
    .object({
      inputPerMTok: z.number().nonnegative().optional(),
      outputPerMTok: z.number().nonnegative().optional(),
      cacheReadPerMTok: z.number().nonnegative().optional(),
      cacheWritePerMTok: z.number().nonnegative().optional(),
    })
    .optional(),
});
const ModelsFileSchema = z.object({
  models: z.array(
    FileModelSchema.refine((m) => m.maxOutputTokens === undefined || m.contextWindow === undefined || m.maxOutputTokens * 2 <= m.contextWindow, {
      message: 'maxOutputTokens may take at most half of contextWindow: the rest is the input the model reads',
      path: ['maxOutputTokens'],
    }),
  ),
});

/** An organization's `custom:<name>` model, from `customModels` of its enterprise-control settings. */
const CustomModelSchema = z.looseObject({
  id: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  baseUrl: z.string().optional(),
  apiKey: z.string().optional(),
  provider: z.string().optional(),
  displayName: z.string().optional(),
  maxOutputTokens: z.number().optional(),
  contextWindow: z.number().optional(),
});

export type FileModel = z.infer<typeof FileModelSchema>;
export type ModelEntry =
  | ({ source: 'file' } & FileModel)
  | {
      source: 'custom';
      id: string;
      /** The upstream model name (`customModels[].model`). */
      upstreamModel?: string;
      provider?: string;
      baseUrl?: string;
      apiKey?: string;
      settings: z.infer<typeof CustomModelSchema>;
    };

let cache: { file: string; mtimeMs: number; models: FileModel[] } | undefined;

/**
 * The models file, re-read when it changes on disk (an operator may add a model without a restart).
 * No file configured: no file models. A broken file throws, naming the file and the problem.
 */
export function fileModels(file: string | undefined = process.env.AGENTPLANE_MODELS_FILE): FileModel[] {
  if (!file) return [];
  const mtimeMs = fs.statSync(file).mtimeMs;
  if (cache && cache.file === file && cache.mtimeMs === mtimeMs) return cache.models;
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`AGENTPLANE_MODELS_FILE ${file}: not JSON (${(err as Error).message})`);
  }
  const parsed = ModelsFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`AGENTPLANE_MODELS_FILE ${file}: ${z.prettifyError(parsed.error)}`);
  cache = { file, mtimeMs, models: parsed.data.models };
  return parsed.data.models;
}

/** The organization's custom models (`customModels` of its enterprise controls), the malformed ones left out. */
export function customModels(enterpriseSettings: unknown): z.infer<typeof CustomModelSchema>[] {
  if (!enterpriseSettings || typeof enterpriseSettings !== 'object') return [];
  const list = (enterpriseSettings as { customModels?: unknown }).customModels;
  if (!Array.isArray(list)) return [];
  return list.flatMap((m) => {
    const parsed = CustomModelSchema.safeParse(m);
    return parsed.success ? [parsed.data] : [];
  });
}

/**
 * The model `id` names, or undefined when it is unknown: a model of the models file, or
 * `custom:<name>` where `<name>` is the `id` (with or without its own `custom:` prefix) of one of
 * the organization's `customModels`.
 */
export function knownModel(id: string, opts: { enterpriseSettings?: unknown; file?: string } = {}): ModelEntry | undefined {
  if (id.startsWith('custom:')) {
    const name = id.slice('custom:'.length);
    const found = customModels(opts.enterpriseSettings).find((m) => m.id === name || m.id === id);
    if (!found) return undefined;
    return {
      source: 'custom',
      id,
      upstreamModel: found.model,
      provider: found.provider,
      baseUrl: found.baseUrl,
      apiKey: found.apiKey,
      settings: found,
    };
  }
  const model = fileModels(opts.file ?? process.env.AGENTPLANE_MODELS_FILE).find((m) => m.id === id);
  return model ? { source: 'file', ...model } : undefined;
}

/** A model ready to call: its client configuration and, for models-file models, its pricing. */
export interface ResolvedModel {
  config: ModelConfig;
  pricing?: ModelPricing;
}

/**
 * What a turn needs to call `id`. Throws an Error whose message tells the session's user what is
 * wrong (unknown model, key not configured) and who can fix it.
 */
export function resolveModel(
  id: string,
  enterpriseSettings: unknown,
  env: NodeJS.ProcessEnv,
  /** How a custom model (its base URL is a tenant's) is called: the egress guard's fetch. */
  tenantFetch: typeof globalThis.fetch,
): ResolvedModel {
  const entry = knownModel(id, { enterpriseSettings });
  if (!entry) throw new Error(`Model ${JSON.stringify(id)} is not configured any more; pick another model with PATCH sessionSettings.model`);
  if (entry.source === 'file') {
    const apiKey = env[entry.apiKeyEnv];
    if (!apiKey)
      throw new Error(`Model ${id} cannot be called: the server's environment variable ${entry.apiKeyEnv} (its API key) is not set; ask an operator`);
    const pricing = entry.pricing ? ModelPricingSchema.safeParse({ inputPerMTok: 0, outputPerMTok: 0, ...entry.pricing }) : undefined;
    return {
      config: {
        id,
        provider: entry.provider,
        baseUrl: entry.baseUrl,
        apiKey,
        upstreamModel: entry.upstreamModel,
        maxOutputTokens: entry.maxOutputTokens,
        contextWindow: entry.contextWindow,
      },
      ...(pricing?.success ? { pricing: pricing.data } : {}),
    };
  }
  if (!entry.baseUrl) throw new Error(`Custom model ${id} has no baseUrl in the organization's customModels; ask an owner to set one`);
  return {
    config: {
      id,
      provider: entry.provider === 'anthropic' ? 'anthropic' : 'openai-compatible',
      baseUrl: entry.baseUrl,
      // Local OpenAI-compatible servers often need no key; the SDKs insist on one.
      apiKey: entry.apiKey ?? 'none',
      upstreamModel: entry.upstreamModel,
      maxOutputTokens: entry.settings.maxOutputTokens,
      fetch: tenantFetch,
      contextWindow: entry.settings.contextWindow,
    },
  };
}
