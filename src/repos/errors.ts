import { InvalidMachineInput } from '../provisioning/machine/errors.ts';

/**
 * A repository URL no use accepts (or the one use at hand refuses), caught before anything runs.
 * A kind of InvalidMachineInput: a clone step on a computer fails with it at once, unretried.
 */
export class InvalidRepoUrl extends InvalidMachineInput {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRepoUrl';
  }
}

/** The repository cannot be cloned as asked: retrying will not help. */
export class CloneFailed extends Error {}
