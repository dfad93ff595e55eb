import type { Db } from '../../db/client.ts';

/** The organization's enterprise-control settings (session defaults, custom models); {} when none. */
export async function enterpriseSettingsOf(db: Db, organizationId: string): Promise<unknown> {
  const org = await db.organization.findUnique({ where: { id: organizationId }, select: { enterpriseSettings: true } });
  return org?.enterpriseSettings ?? {};
}
