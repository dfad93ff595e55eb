import { AutonomyLevelSchema, type AutonomyLevel } from '../../agent/index.ts';
import { BadRequest } from '../../lib/errors.ts';
import type { SessionSettingsInput } from './schemas.ts';
import type { StoredSettings } from './settings.ts';

const ORDER: readonly AutonomyLevel[] = AutonomyLevelSchema.options;

/** The organization's `maxAutonomyLevel` (enterprise controls); undefined when unset or not a level. */
export function maxAutonomyLevelOf(enterpriseSettings: unknown): AutonomyLevel | undefined {
  const value =
    enterpriseSettings && typeof enterpriseSettings === 'object' ? (enterpriseSettings as { maxAutonomyLevel?: unknown }).maxAutonomyLevel : undefined;
  const parsed = AutonomyLevelSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

const above = (level: AutonomyLevel, max: AutonomyLevel) => ORDER.indexOf(level) > ORDER.indexOf(max);

/**
 * The autonomy a session's tools run under: spec mode only looks (off), and no session runs above
 * its organization's `maxAutonomyLevel`, even one set before the maximum was lowered.
 */
export function effectiveAutonomy(settings: StoredSettings, max?: AutonomyLevel): AutonomyLevel {
  const level = settings.interactionMode === 'spec' ? 'off' : (settings.autonomyLevel ?? 'off');
  return max && above(level, max) ? max : level;
}

/**
 * Refuses a level the caller asked for (`change`: the body's sessionSettings) above the
 * organization's maximum: 400 naming the field, the maximum and the levels allowed. A level the
 * caller did not ask for (the organization's session defaults) is lowered to the maximum instead.
 */
export function enforceMaxAutonomy(settings: StoredSettings, change: SessionSettingsInput, enterpriseSettings: unknown): void {
  const max = maxAutonomyLevelOf(enterpriseSettings);
  if (!max || settings.autonomyLevel === undefined || !above(settings.autonomyLevel, max)) return;
  const asked = change.autonomyLevel !== undefined ? 'autonomyLevel' : change.autonomyMode?.startsWith('auto-') ? 'autonomyMode' : undefined;
  if (!asked) {
    settings.autonomyLevel = max;
    return;
  }
  const allowed = ORDER.slice(0, ORDER.indexOf(max) + 1);
  const value = asked === 'autonomyLevel' ? change.autonomyLevel : change.autonomyMode;
  throw new BadRequest(
    `sessionSettings.${asked} ${JSON.stringify(value)} is above the organization's maxAutonomyLevel ${JSON.stringify(max)} (enterprise controls); use one of ${allowed.join(', ')}`,
    { metadata: { errors: [{ field: `sessionSettings.${asked}`, message: `above maxAutonomyLevel ${max}` }], maxAutonomyLevel: max } },
  );
}
