import type { Principal } from '../../auth/principal.ts';
import { BadRequest } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { generateKeyPair } from '../../ssh/index.ts';
import type { Owner } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import { assertNameAndHostFree, insertComputer } from './insert.ts';
import { assertMayAddComputer } from './quota.ts';
import type { BulkCreateInput, CreateComputerInput } from './schemas.ts';
import { claimFromPool } from './pool/claim.ts';
import { bulkCreate } from './create-bulk.ts';
import { managedSteps } from './steps/names.ts';
import { sendProvision } from './managed/job-kinds.ts';
import { usableProvider } from './provider-choice.ts';
import { applySource, setupScriptOf, sourceComputerOf, type SourcedInput } from './source.ts';
import { PROGRAM_PROVIDER } from './program-template.ts';
import { begin } from './lifecycle.ts';

const versionAudit = (sourced: SourcedInput) => (sourced.templateVersionId ? { templateVersionId: sourced.templateVersionId } : {});

/** Creating managed computers: one (provisioning follows as a job), or many (create-bulk.ts). */
export function managedComputers(deps: ComputersDeps) {
  /**
   * Stores the computer in `provisioning`. `queue: false` leaves sending its provisioning job to
   * the caller (bulk creation sends them all once every computer is stored).
   */
  async function create(principal: Principal, owner: Owner, input: CreateComputerInput, opts: { queue?: boolean } = {}) {
    const sourced = await applySource(deps.db, principal, input);
    const provider = sourced.templateVersionId ? { name: PROGRAM_PROVIDER } : await usableProvider(deps.providers, sourced.provider);
    if (input.connection) throw new BadRequest('connection applies to byom machines; a managed computer is reached through its provider');
    await assertMayAddComputer(deps.db, deps.clock, principal.organizationId, owner);
    await assertNameAndHostFree(deps.db, principal.organizationId, owner, input.name, input.hostId);
    const claimed = await claimFromPool(deps, principal, owner, input, sourced, provider.name);
    if (claimed) return claimed;
    const id = newId('cmp');
    const key = generateKeyPair(`agentplane-${id}`);
    const { repos, autoInstallDeps } = sourced;
    const now = deps.clock.now();
    return insertComputer(
      deps,
      principal,
      owner,
      {
        id,
        name: input.name,
        providerType: provider.name,
        status: 'provisioning',
        hostId: input.hostId,
        isListed: sourced.isListed,
        source: sourced.source,
        repos,
        autoInstallDeps,
        sshPublicKey: key.publicKey,
        sshKeyCiphertext: deps.secrets.seal(key.privateKey),
        resources: { ...deps.managed.resources },
        templateVersionId: sourced.templateVersionId,
        ...begin('provision', now, deps.managed),
      },
      managedSteps({
        repos,
        autoInstallDeps,
        setupScript: setupScriptOf(sourced.source) !== undefined,
        copyWorkspace: sourceComputerOf(sourced.source) !== undefined,
      }),
      {
        audit: { name: input.name, providerType: provider.name, ownerId: owner.id, ...versionAudit(sourced) },
        send: opts.queue === false ? undefined : (tx) => sendProvision(deps.queue, id, tx),
      },
    );
  }

  return {
    /** 201 `provisioning` at once (the stack job takes the computer to `active` or `error`), or a warm pool's computer. */
    create,

    bulkCreate: (principal: Principal, input: BulkCreateInput) =>
      bulkCreate(deps, (p, owner, one) => create(p, owner, one, { queue: false }), principal, input),
  };
}
