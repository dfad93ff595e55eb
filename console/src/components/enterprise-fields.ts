import { html } from '../html.ts';

type Settings = Record<string, unknown>;

const AUTONOMY = [
  ['off', 'off: reads only; every change needs approval'],
  ['low', 'low: also writes and edits files'],
  ['medium', 'medium: also runs shell commands'],
  ['high', 'high: as medium (commands are not yet told apart by risk)'],
] as const;

const objectAt = (s: Settings, key: string): Settings => {
  const v = s[key];
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Settings) : {};
};

/**
 * The settings agentplane acts on, as fields with what each does; every other key stays as it is
 * in the raw JSON beside them. `set` receives the whole new settings document.
 */
export function EnterpriseFields({ settings, set }: { settings: Settings; set: (next: Settings) => void }) {
  const defaults = objectAt(settings, 'sessionDefaultSettings');
  const setDefault = (key: string, value: string) => {
    const next = { ...defaults };
    if (value) next[key] = value;
    else delete next[key];
    const { sessionDefaultSettings: _, ...rest } = settings;
    set(Object.keys(next).length ? { ...rest, sessionDefaultSettings: next } : rest);
  };
  const models = Array.isArray(settings.customModels) ? (settings.customModels as Settings[]) : [];
  const policy = objectAt(settings, 'modelPolicy');
  const setPolicy = (key: string, value: unknown) => {
    const next = { ...policy };
    if (value === undefined) delete next[key];
    else next[key] = value;
    const { modelPolicy: _, ...rest } = settings;
    set(Object.keys(next).length ? { ...rest, modelPolicy: next } : rest);
  };
  const allowed = Array.isArray(policy.allowedModelIds) ? (policy.allowedModelIds as unknown[]).join(', ') : '';
  return html`<fieldset class="fields-form">
    <legend>What agentplane does with these settings</legend>
    <label class="check">
      <input
        type="checkbox"
        checked=${settings.wikiCloudSync !== false}
        onChange=${(e: Event) => {
          const { wikiCloudSync: _, ...rest } = settings;
          set((e.target as HTMLInputElement).checked ? rest : { ...rest, wikiCloudSync: false });
        }}
      />
      Wiki runs (<code>wikiCloudSync</code>)
      <span class="hint">Off: every wiki endpoint answers 403 for this organization, public links included.</span>
    </label>
    <label
      >Default model for new sessions (<code>sessionDefaultSettings.model</code>)
      <input value=${typeof defaults.model === 'string' ? defaults.model : ''} onInput=${(e: Event) => setDefault('model', (e.target as HTMLInputElement).value)} />
      <span class="hint">Used when a session names no model: an id of the deployment's models file or of a custom model below. Empty: the deployment's default.</span>
    </label>
    <label
      >Default autonomy level (<code>sessionDefaultSettings.autonomyLevel</code>)
      <select value=${typeof defaults.autonomyLevel === 'string' ? defaults.autonomyLevel : ''} onChange=${(e: Event) => setDefault('autonomyLevel', (e.target as HTMLSelectElement).value)}>
        <option value="">not set (off)</option>
        ${AUTONOMY.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
      </select>
      <span class="hint">What a session's agent may do without asking, unless the session sets its own level.</span>
    </label>
    <label
      >Highest autonomy level (<code>maxAutonomyLevel</code>)
      <select
        value=${typeof settings.maxAutonomyLevel === 'string' ? settings.maxAutonomyLevel : ''}
        onChange=${(e: Event) => {
          const { maxAutonomyLevel: _, ...rest } = settings;
          const level = (e.target as HTMLSelectElement).value;
          set(level ? { ...rest, maxAutonomyLevel: level } : rest);
        }}
      >
        <option value="">no limit</option>
        ${AUTONOMY.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
      </select>
      <span class="hint">No session runs above it: a session asking for more is refused (400), and sessions set higher before run at this level.</span>
    </label>
    <label
      >Models sessions may use (<code>modelPolicy.allowedModelIds</code>)
      <input
        value=${allowed}
        onChange=${(e: Event) => {
          const ids = (e.target as HTMLInputElement).value
            .split(',')
            .map((id) => id.trim())
            .filter(Boolean);
          setPolicy('allowedModelIds', ids.length ? ids : undefined);
        }}
      />
      <span class="hint">Model ids, separated by commas; empty: every model the deployment offers. <code>blockedModelIds</code> (raw view) refuses some.</span>
    </label>
    <label class="check">
      <input type="checkbox" checked=${policy.allowCustomModels !== false} onChange=${(e: Event) => setPolicy('allowCustomModels', (e.target as HTMLInputElement).checked ? undefined : false)} />
      Custom models allowed (<code>modelPolicy.allowCustomModels</code>)
      <span class="hint">Off: sessions may not use the organization's custom models below.</span>
    </label>
    <div>
      <strong>Custom models (<code>customModels</code>)</strong>
      ${
        models.length
          ? html`<ul>
            ${models.map((m) => html`<li><code>${String(m.id)}</code> · ${String(m.provider ?? '?')} · ${String(m.baseUrl ?? '')}</li>`)}
          </ul>`
          : html`<p class="hint">None.</p>`
      }
      <p class="hint">
        Models this organization's sessions may use besides the deployment's: edit them in the raw view as
        <code>{"id", "provider", "baseUrl", "apiKey"}</code>; stored keys are shown masked, and sending the mask back keeps them.
      </p>
    </div>
  </fieldset>`;
}
