import * as pulumi from '@pulumi/pulumi';
import k8s from '@pulumi/kubernetes';
import { Agentplane } from './agentplane.ts';
import { parseSettings, rawSettings, type Settings } from './settings.ts';

/** Reads and validates this stack's `agentplane:*` settings; throws SettingsError before any resource exists. */
export function loadSettings(): Settings {
  const { raw, secretKeys } = rawSettings(pulumi.runtime.allConfig(), isConfigSecret);
  return parseSettings(raw, secretKeys);
}

/** The deploy program: validated settings, one provider, one Agentplane component, its outputs. */
export function deploy(settings: Settings = loadSettings()) {
  const provider = new k8s.Provider('agentplane', {
    context: settings.kubeContext,
    renderYamlToDirectory: settings.renderYamlToDirectory,
  });
  const app = new Agentplane('agentplane', settings, { providers: [provider] });
  return { apiUrl: app.apiUrl, firstApiKey: app.firstApiKey, namespace: app.namespace.metadata.name };
}

// The SDK exports this but marks it internal; it is the only way to tell an encrypted stack value apart.
function isConfigSecret(fullKey: string): boolean {
  const runtime = pulumi.runtime as unknown as { isConfigSecret?: (k: string) => boolean };
  if (typeof runtime.isConfigSecret !== 'function') throw new Error('@pulumi/pulumi no longer exports runtime.isConfigSecret');
  return runtime.isConfigSecret(fullKey);
}
