export { detectInstallPlans } from './detect-installs.ts';
export { InvalidMachineInput, MachineCommandFailed, ToolNotInstalled } from './errors.ts';
export { type InstallPlan } from './install-plan.ts';
export { sampleMetrics } from './metrics.ts';
export { runInstall } from './run-install.ts';
