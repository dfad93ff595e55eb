import type { ComputersDeps } from './deps.ts';
import { computerOperations } from './operations.ts';
import { computerRecords } from './records.ts';

/** Computers: the rules of spec 4.2 and 3.2, free of HTTP. */
export function createComputersService(deps: ComputersDeps) {
  return {
    ...computerRecords(deps),
    ...computerOperations(deps),
    /** Managed providers whose prerequisites are present on this deployment right now. */
    listAvailableProviders: () => deps.providers.available(),
  };
}
export type ComputersService = ReturnType<typeof createComputersService>;
