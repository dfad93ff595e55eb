export { createKubernetesProvider } from './provider.ts';
export { missingPrerequisites, kubernetesPluginPath } from './availability.ts';
export { IMAGE as COMPUTER_IMAGE_CONTRACT } from './image-contract.ts';
