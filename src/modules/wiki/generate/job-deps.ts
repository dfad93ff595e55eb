import type { PrismaClient } from '../../../db/client.ts';
import type { EgressGuard } from '../../../egress/guard.ts';
import type { Clock } from '../../../lib/clock.ts';
import type { SecretBox } from '../../../lib/secret-box.ts';
import type { SshClient } from '../../../provisioning/ssh/index.ts';
import type { ResolveComputerTarget } from '../../../repos/computer-target.ts';
import type { SurveyBounds } from '../survey/survey.ts';

export interface WikiJobSettings {
  bounds: SurveyBounds;
  runTimeoutSeconds: number;
}

export const DEFAULT_WIKI_JOB_SETTINGS: WikiJobSettings = { bounds: { maxFiles: 50_000, maxBytes: 1024 * 1024 * 1024 }, runTimeoutSeconds: 1800 };

/** What the generation job needs. */
export interface GenerateJobDeps {
  prisma: PrismaClient;
  clock: Clock;
  /** Parent of local scratch clones: `<data dir>/wiki`. */
  scratchRoot: string;
  /** Clones are checked with `check`; custom models (a tenant's URL) are called through `fetch`. */
  egress: Pick<EgressGuard, 'check' | 'fetch'>;
  /** Opens the organization's sealed custom-model keys and forge tokens (private repositories). */
  secrets: SecretBox;
  computers?: { ssh: SshClient; resolveTarget: ResolveComputerTarget };
  settings: WikiJobSettings;
}
