import type { z } from 'zod';
import type { Guard } from '../../../auth/guards.ts';
import type { Principal } from '../../../auth/principal.ts';
import type { Db } from '../../../db/client.ts';
import type { AutomationDeclarations } from '../../automations/declare.ts';
import type { TemplatesService } from '../../computer-templates/service.ts';
import type { ComputersService } from '../../computers/service.ts';
import type { IntegrationsService } from '../../integrations/service.ts';
import type { OrganizationService } from '../../organization/service.ts';
import type { ServiceAccountsService } from '../../service-accounts/service.ts';
import type { WebhooksService } from '../../webhooks/service.ts';

/** The modules' own operations config applies through, so their rules, audit records and side effects hold. */
export interface Operations {
  templates: Pick<TemplatesService, 'create' | 'update' | 'remove'>;
  pools: Pick<ComputersService, 'setProviderPoolSize'>;
  serviceAccounts: Pick<ServiceAccountsService, 'create' | 'update' | 'remove'>;
  organization: Pick<OrganizationService, 'inviteUser' | 'removeUser' | 'setGlobalLimit' | 'setUserLimits' | 'setEnterpriseControls'>;
  integrations: Pick<IntegrationsService, 'create' | 'remove'>;
  webhooks: Pick<WebhooksService, 'create' | 'update' | 'remove'>;
  automations: AutomationDeclarations;
}

/** An object of the organization as a kind sees it: its key, its id, and its state in the spec's terms. */
export interface Actual {
  key: string;
  resourceId: string;
  spec: Record<string, unknown>;
}

/** A secret reference found in a spec: the field naming it and the secret's name. */
interface SecretUse {
  /** Where in the document, e.g. ['spec', 'tokenFrom', 'secret']. */
  path: (string | number)[];
  secret: string;
}

/** What a document refers to (a managed provider, a member declared or existing), checked before anything applies. */
interface Reference {
  /** Where in the document, e.g. ['spec', 'provider']. */
  path: (string | number)[];
  kind: 'provider' | 'member';
  name: string;
}

export interface ApplyContext {
  ops: Operations;
  principal: Principal;
  /** A secret's value by name (the plan checked it exists). */
  secret(name: string): Promise<string>;
}

/**
 * One kind of document: its spec schema (the API's own request schema), who may change it, how
 * its objects are keyed and read, and how a change is made through the module's operations.
 */
export interface KindHandler<S = Record<string, unknown>> {
  kind: string;
  spec: z.ZodType<S>;
  /** At most one document of the kind (organization-wide settings). */
  singleton?: boolean;
  /** The route guards of the operations it applies through. */
  guards: Guard[];
  key(name: string, spec: S): string;
  /**
   * The spec with defaults filled in, as compared with an object's state; a field left
   * undefined is not compared (the server chooses it, e.g. an integration's username).
   */
  normalize(spec: S): Record<string, unknown>;
  secrets?(spec: S): SecretUse[];
  references?(spec: S, name: string): Reference[];
  current(db: Db, organizationId: string): Promise<Actual[]>;
  create(ctx: ApplyContext, name: string, spec: S): Promise<string>;
  update(ctx: ApplyContext, actual: Actual, spec: S, changed: string[]): Promise<void>;
  remove(ctx: ApplyContext, actual: Actual): Promise<void>;
  /** Effects that follow a change in the background. */
  pending?(spec: S, changed: string[]): string[];
  /** A document name for an object export writes. */
  exportName?(actual: Actual): string;
}

export const defineKind = <S>(handler: KindHandler<S>): KindHandler => handler as unknown as KindHandler;
