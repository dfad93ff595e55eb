export { createKubernetesProvider, type KubernetesProviderOptions } from './provider.ts';
export { kubernetesComputerProgram } from './program.ts';
export { missingPrerequisites, kubernetesPluginPath } from './availability.ts';
export { ComputerInputError } from './input.ts';
export { IMAGE as COMPUTER_IMAGE_CONTRACT } from './image-contract.ts';
export { LABELS, ANNOTATIONS } from './labels.ts';
export type { KubernetesSettings } from './settings.ts';
