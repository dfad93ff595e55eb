import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { PulumiToolchain } from '../pulumi/toolchain.ts';

/** The YAML language host the toolchain puts beside the CLI. */
export function yamlLanguageHost(toolchain: PulumiToolchain): string {
  return path.join(toolchain.binDir, 'pulumi-language-yaml');
}

/** Whether the toolchain holds a resource plugin of `pkg` (any version: the engine picks the newest it has). */
export function pluginInstalled(toolchain: PulumiToolchain, pkg: string): boolean {
  const dir = path.join(toolchain.pulumiHome, 'plugins');
  if (!existsSync(dir)) return false;
  return readdirSync(dir).some((name) => name.startsWith(`resource-${pkg}-v`) && !name.endsWith('.lock') && !name.endsWith('.lastused'));
}

/** What keeps this deployment from running YAML programs, each with what provides it; empty when nothing does. */
export function missingProgramPrerequisites(toolchain: PulumiToolchain, allowed: string[]): string[] {
  const missing: string[] = [];
  if (!existsSync(toolchain.pulumiBin)) missing.push(`the Pulumi CLI is not at ${toolchain.pulumiBin} (bash scripts/pulumi-toolchain.sh)`);
  if (!existsSync(yamlLanguageHost(toolchain))) missing.push(`pulumi-language-yaml is not in ${toolchain.binDir} (bash scripts/pulumi-toolchain.sh)`);
  if (!allowed.some((p) => pluginInstalled(toolchain, p))) {
    missing.push(`none of the allowed providers (AGENTPLANE_PROGRAM_PROVIDERS=${allowed.join(',')}) is installed under ${toolchain.pulumiHome}/plugins`);
  }
  return missing;
}
