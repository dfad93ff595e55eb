export type { ProgramEndpoint, ProgramSource } from './contract.ts';
export { createProgramEngine, type ProgramEngine } from './engine.ts';
export { ProgramProblem } from './problem.ts';
export type { StackProgram } from './stack-program.ts';
