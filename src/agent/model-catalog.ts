import { contextLimits } from './context-limits.ts';
import { customModels, fileModels } from './models.ts';

/** One model an organization may pick for its sessions. */
export interface CatalogModel {
  id: string;
  provider: 'anthropic' | 'openai-compatible';
  contextWindow: number;
  isDefault: boolean;
}

/**
 * `modelPolicy` of the organization's enterprise controls (the keys the hosted platform uses):
 * `allowedModelIds` (when non-empty, only these), `blockedModelIds` (never these; custom models by
 * their `custom:<name>` id), `allowCustomModels` (false: none of the organization's custom models).
 */
interface ModelPolicy {
  allowed?: ReadonlySet<string>;
  blocked: ReadonlySet<string>;
  allowCustom: boolean;
}

function policyOf(enterpriseSettings: unknown): ModelPolicy {
  const raw = enterpriseSettings && typeof enterpriseSettings === 'object' ? (enterpriseSettings as { modelPolicy?: unknown }).modelPolicy : undefined;
  const policy = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const ids = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const allowed = ids(policy.allowedModelIds);
  return {
    ...(allowed.length > 0 ? { allowed: new Set(allowed) } : {}),
    blocked: new Set(ids(policy.blockedModelIds)),
    allowCustom: policy.allowCustomModels !== false,
  };
}

/** Whether the organization's model policy lets its sessions use `id` (known or not). */
export function modelAllowed(id: string, enterpriseSettings: unknown): boolean {
  const policy = policyOf(enterpriseSettings);
  if (id.startsWith('custom:') && !policy.allowCustom) return false;
  if (policy.blocked.has(id)) return false;
  return !policy.allowed || policy.allowed.has(id);
}

/**
 * The models an organization may use, in order: the models file's, then the organization's custom
 * models (`custom:<id>`), each kept only where its model policy allows it. The default is
 * `defaultModel` (AGENTPLANE_DEFAULT_MODEL) when the organization may use it, else the first
 * model listed; none when the list is empty.
 */
export function modelCatalog(enterpriseSettings: unknown, defaultModel: string | undefined): CatalogModel[] {
  const file = fileModels().map((m) => ({ id: m.id, provider: m.provider, contextWindow: contextLimits(m).contextWindow }));
  const custom = customModels(enterpriseSettings).flatMap((m) => {
    if (!m.id) return [];
    const id = m.id.startsWith('custom:') ? m.id : `custom:${m.id}`;
    const provider = m.provider === 'anthropic' ? ('anthropic' as const) : ('openai-compatible' as const);
    return [{ id, provider, contextWindow: contextLimits({ provider, contextWindow: m.contextWindow, maxOutputTokens: m.maxOutputTokens }).contextWindow }];
  });
  const listed = [...file, ...custom].filter((m) => modelAllowed(m.id, enterpriseSettings));
  const chosen = listed.find((m) => m.id === defaultModel)?.id ?? listed[0]?.id;
  return listed.map((m) => ({ ...m, isDefault: m.id === chosen }));
}

/** The model a session that names none uses, per modelCatalog; undefined when the organization may use none. */
export function defaultModelFor(enterpriseSettings: unknown, defaultModel: string | undefined): string | undefined {
  return modelCatalog(enterpriseSettings, defaultModel).find((m) => m.isDefault)?.id;
}
