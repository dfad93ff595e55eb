import { newId } from '../../src/lib/ids.ts';
import { managedSteps } from '../../src/modules/computers/steps/names.ts';
import { createSteps } from '../../src/modules/computers/steps/store.ts';
import { generateKeyPair } from '../../src/ssh/index.ts';
import type { TestApi } from './api.ts';

/**
 * A program template of acme with one ready version at `commit`, its current one, as the
 * template's tracking leaves it once that commit's preview passed.
 */
export async function storeProgramTemplate(api: TestApi, t: { name: string; repository: string; path: string; commit: string }) {
  const prisma = api.db.prisma;
  const templateId = newId('ctpl');
  const versionId = newId('ctv');
  await prisma.computerTemplate.create({
    data: {
      id: templateId,
      organizationId: api.acme.id,
      name: t.name,
      liveName: t.name,
      provider: 'program',
      programRepository: t.repository,
      programPath: t.path,
      programRef: 'main',
      registrationTimeoutSeconds: 60,
      createdBy: api.acme.members.user.userId,
    },
  });
  await prisma.computerTemplateVersion.create({ data: { id: versionId, templateId, organizationId: api.acme.id, commit: t.commit, status: 'ready' } });
  await prisma.computerTemplate.update({ where: { id: templateId }, data: { currentVersionId: versionId } });
  return { templateId, versionId };
}

/**
 * A program computer of acme's user as its provisioning job finds it before `pulumi up`: stored
 * with its key and steps, `provision` under way (nothing queued). `version` ties it to a template
 * version, as computers made from a program template are.
 */
export async function storeProgramComputer(api: TestApi, name: string, version?: { templateId: string; versionId: string }): Promise<string> {
  const prisma = api.db.prisma;
  const id = newId('cmp');
  const key = generateKeyPair();
  await prisma.computer.create({
    data: {
      id,
      organizationId: api.acme.id,
      ownerKind: 'human',
      ownerId: api.acme.members.user.userId,
      name,
      liveName: name,
      providerType: 'program',
      ...(version ? { templateVersionId: version.versionId, source: { kind: 'template', templateId: version.templateId } } : {}),
      status: 'provisioning',
      sshPublicKey: key.publicKey,
      sshKeyCiphertext: api.machines.secrets.seal(key.privateKey),
      resources: { cpus: 1, memoryMiB: 512, diskGiB: 1 },
      operation: 'provision',
      operationDeadline: new Date(Date.now() + 600_000),
      createdBy: api.acme.members.user.userId,
    },
  });
  await createSteps(prisma, id, managedSteps({ repos: [], autoInstallDeps: false, setupScript: false, copyWorkspace: false }));
  return id;
}
