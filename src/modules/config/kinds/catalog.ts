import { ciAutomationKind } from './ci-automations.ts';
import { computerTemplateKind } from './computer-templates.ts';
import { creditLimitsKind } from './credit-limits.ts';
import { enterpriseControlsKind } from './enterprise-controls.ts';
import { integrationKind } from './integrations.ts';
import { memberKind } from './members.ts';
import { providerPoolKind } from './provider-pools.ts';
import { serviceAccountKind } from './service-accounts.ts';
import type { KindHandler } from './types.ts';
import { webhookKind } from './webhooks.ts';

/**
 * Every kind, in the order changes apply (deletes run in reverse): connections and accounts
 * before what may use them, members before their credit limits,
 * forge connections before the automations whose pull requests they open.
 */
export const KINDS: readonly KindHandler[] = [
  integrationKind,
  computerTemplateKind,
  providerPoolKind,
  serviceAccountKind,
  memberKind,
  creditLimitsKind,
  enterpriseControlsKind,
  ciAutomationKind,
  webhookKind,
];

export const KIND_NAMES = KINDS.map((k) => k.kind);

const byName = new Map(KINDS.map((k) => [k.kind, k]));
export const kindByName = (kind: string) => byName.get(kind);
