export { detectInstallPlans } from './detect-installs.ts';
export { InvalidMachineInput, MachineCommandFailed, ToolNotInstalled } from './errors.ts';
export { installPlanSchema, packageManagers, planInstalls, type InstallPlan, type PackageManager } from './install-plan.ts';
export { sampleMetrics } from './metrics.ts';
export { parseMetricsOutput, type MetricsSample } from './metrics-parse.ts';
export { runInstall, INSTALL_OUTPUT_TAIL_BYTES, type InstallResult, type RunInstallOptions } from './run-install.ts';
