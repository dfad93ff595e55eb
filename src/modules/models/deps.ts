import type { Db } from '../../db/client.ts';

export interface ModelsDeps {
  db: Db;
  /** AGENTPLANE_DEFAULT_MODEL. */
  defaultModel?: string;
}
