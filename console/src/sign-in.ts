import { useState } from 'preact/hooks';
import { problemOf, type ApiProblem } from './api.ts';
import { ErrorBox } from './components/ui.ts';
import { credential, signOutReason } from './credential.ts';
import { html } from './html.ts';

/**
 * Sign-in with an API key or, where the deployment accepts them, a JWT access token: the value is
 * checked with one API call and kept in this tab's session storage only.
 */
export function SignIn() {
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiProblem>();
  const [reason] = useState(() => {
    const r = signOutReason.value;
    signOutReason.value = '';
    return r;
  });
  const submit = async (e: Event) => {
    e.preventDefault();
    const candidate = value.trim();
    if (!candidate) return;
    setBusy(true);
    setError(undefined);
    try {
      const response = await fetch('/api/v0/computers', { headers: { Authorization: `Bearer ${candidate}` } });
      if (response.status === 401) {
        setError(problemOf(response, await response.json().catch(() => undefined)));
        return;
      }
      void response.body?.cancel();
      credential.set(candidate);
    } catch (err) {
      setError({ status: 0, title: 'Network error', detail: `The control plane could not be reached: ${(err as Error).message}` } as ApiProblem);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="sign-in">
    <form onSubmit=${submit} aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in to agentplane</h1>
      ${reason ? html`<p class="notice" role="status">You were signed out: ${reason}</p>` : null}
      <label for="credential">API key or JWT access token</label>
      <input
        id="credential"
        name="credential"
        type="password"
        autocomplete="off"
        spellcheck=${false}
        required
        placeholder="apk_…"
        value=${value}
        onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)}
      />
      <p class="hint">
        The first start of an empty server prints the owner's key; <code>agentplane bootstrap</code> issues another. The
        value stays in this tab only and is forgotten when the tab closes.
      </p>
      <${ErrorBox} error=${error} what="Sign-in failed" />
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Checking…' : 'Sign in'}</button>
    </form>
  </main>`;
}
