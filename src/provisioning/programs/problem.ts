/**
 * A clear, user-facing reason a program cannot be used: a repository, path or ref that does not
 * exist, a `Pulumi.yaml` that is missing, not YAML or not `runtime: yaml`, a provider the operator
 * did not allow or install, outputs that miss the contract. Callers store `message` on the
 * template or the computer as it is: it names the file, key or provider and what to do.
 */
export class ProgramProblem extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ProgramProblem';
  }
}
