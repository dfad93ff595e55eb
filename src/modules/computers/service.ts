import type { ComputersDeps } from './deps.ts';
import { computerOperations } from './operations.ts';
import { poolOperations } from './pool/service.ts';
import { computerRecords } from './records.ts';
import { updateComputer } from './update.ts';
import type { Principal } from '../../auth/principal.ts';
import { registerDialIn } from './dial-in-register.ts';
import type { RegisterDialInInput } from './schemas.ts';

/** Computers: the rules of spec 4.2 and 3.2, free of HTTP. */
export function createComputersService(deps: ComputersDeps) {
  return {
    ...computerRecords(deps),
    ...computerOperations(deps),
    ...poolOperations(deps),
    /** POST /computers/{id}/update (update.ts). */
    updateVersion: (principal: Principal, computerId: string) => updateComputer(deps, principal, computerId),
    registerDialIn: (input: RegisterDialInInput) => registerDialIn(deps, input),
    /** Managed providers whose prerequisites are present right now; with `includeUnavailable`, also the others and why. */
    async listProviders(includeUnavailable: boolean) {
      const status = await deps.providers.status();
      const providers = status.filter((s) => s.available).map((s) => s.name);
      if (!includeUnavailable) return { providers };
      return { providers, unavailable: status.filter((s) => !s.available).map(({ name, missing }) => ({ name, missing })) };
    },
  };
}
export type ComputersService = ReturnType<typeof createComputersService>;
