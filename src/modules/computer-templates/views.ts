import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import type { ComputerTemplateView } from './schemas.ts';

export function templateView(t: ComputerTemplate): ComputerTemplateView {
  return {
    id: t.id,
    name: t.name,
    provider: t.provider ?? undefined,
    repos: t.repos,
    autoInstallDeps: t.autoInstallDeps,
    setupScript: t.setupScript ?? undefined,
    warmPoolSize: t.warmPoolSize,
    createdAt: t.createdAt.getTime(),
    updatedAt: t.updatedAt.getTime(),
  };
}
