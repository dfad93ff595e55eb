import type { Principal } from '../../auth/principal.ts';
import { modelCatalog } from '../../agent/model-catalog.ts';
import { enterpriseSettingsOf } from '../organization/enterprise-settings.ts';
import type { ModelsDeps } from './deps.ts';

/** The models an organization's sessions may use (src/agent/model-catalog.ts decides which, and the default). */
export function createModelsService(deps: ModelsDeps) {
  return {
    async list(principal: Principal) {
      return { models: modelCatalog(await enterpriseSettingsOf(deps.db, principal.organizationId), deps.defaultModel) };
    },
  };
}
export type ModelsService = ReturnType<typeof createModelsService>;
