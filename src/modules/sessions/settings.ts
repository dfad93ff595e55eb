import type { AUTONOMY_LEVELS, AUTONOMY_MODES, INTERACTION_MODES, SessionSettingsInput } from './schemas.ts';

type InteractionMode = (typeof INTERACTION_MODES)[number];
type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];
type AutonomyMode = (typeof AUTONOMY_MODES)[number];

/** The settings stored on a session: what a caller may set, minus archivedAt (a column of its own). */
export type StoredSettings = Omit<SessionSettingsInput, 'archivedAt'>;

/** Deprecated autonomyMode -> interactionMode + autonomyLevel. */
function fromAutonomyMode(mode: AutonomyMode): { interactionMode: InteractionMode; autonomyLevel?: AutonomyLevel } {
  switch (mode) {
    case 'normal':
      return { interactionMode: 'auto', autonomyLevel: 'off' };
    case 'spec':
      return { interactionMode: 'spec' };
    case 'auto-low':
      return { interactionMode: 'auto', autonomyLevel: 'low' };
    case 'auto-medium':
      return { interactionMode: 'auto', autonomyLevel: 'medium' };
    case 'auto-high':
      return { interactionMode: 'auto', autonomyLevel: 'high' };
  }
}

/** interactionMode + autonomyLevel -> the deprecated autonomyMode; none for mission (no equivalent). */
export function toAutonomyMode(mode: InteractionMode | undefined, level: AutonomyLevel | undefined): AutonomyMode | undefined {
  if (mode === 'spec') return 'spec';
  if (mode !== undefined && mode !== 'auto') return undefined;
  if (level === undefined) return mode === 'auto' ? 'normal' : undefined;
  return level === 'off' ? 'normal' : `auto-${level}`;
}

/**
 * Applies `change` to `current`: fields present replace, absent ones stay. An autonomyMode fills in
 * interactionMode and autonomyLevel where the change does not name them (the new fields win); the
 * stored settings never hold autonomyMode itself, the view derives it.
 */
export function mergeSettings(current: StoredSettings, change: SessionSettingsInput): StoredSettings {
  const { archivedAt: _archived, autonomyMode, ...rest } = change;
  const next: StoredSettings = { ...current };
  if (autonomyMode) {
    const mapped = fromAutonomyMode(autonomyMode);
    next.interactionMode = mapped.interactionMode;
    if (mapped.autonomyLevel) next.autonomyLevel = mapped.autonomyLevel;
  }
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) (next as Record<string, unknown>)[key] = value;
  }
  delete next.autonomyMode;
  return next;
}

/** The organization's `sessionDefaultSettings` (enterprise controls), the base of a new session's settings. */
export function organizationDefaults(enterpriseSettings: unknown): Record<string, unknown> {
  if (!enterpriseSettings || typeof enterpriseSettings !== 'object') return {};
  const defaults = (enterpriseSettings as { sessionDefaultSettings?: unknown }).sessionDefaultSettings;
  return defaults && typeof defaults === 'object' && !Array.isArray(defaults) ? (defaults as Record<string, unknown>) : {};
}
