import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiProblem } from '../api.ts';
import { html } from '../html.ts';
import type { LiveMode } from '../live.ts';

/** The API's answer as it is: status, title and `detail` (403s and 404s included). */
export function ErrorBox({ error, what }: { error?: ApiProblem; what?: string }) {
  if (!error) return null;
  return html`<div class="error" role="alert">
    <strong>${what ? `${what}: ` : ''}${error.status ? `${error.status} ${error.title}` : error.title}</strong>
    <p>${error.detail}</p>
  </div>`;
}

/** A form's submit handler: the page stays (no browser navigation) and `action` runs. */
export const submitted = (action: () => unknown) => (e: Event) => {
  e.preventDefault();
  void action();
};

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return html`<p class="loading" role="status"><span class="spinner" aria-hidden="true"></span> ${label}</p>`;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return html`<div class="empty"><p><strong>${title}</strong></p>${children}</div>`;
}

export function Badge({ value }: { value: string }) {
  return html`<span class=${`badge badge-${value.replace(/[^a-z_-]/gi, '').toLowerCase()}`}>${value}</span>`;
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · agentplane`;
  }, [title]);
  return html`<header class="page-header"><h1 id="page-title" tabindex="-1">${title}</h1><div class="actions">${children}</div></header>`;
}

/**
 * The header button that opens a page's form ("New ...", the page's primary action) and, while the
 * form is open, closes it: then a plain button, since the form's own submit is the primary action.
 */
export function FormToggle({ open, set, label }: { open: boolean; set: (open: boolean) => void; label: string }) {
  return html`<button type="button" class=${open ? '' : 'primary'} aria-expanded=${open} onClick=${() => set(!open)}>${open ? 'Close' : label}</button>`;
}

export function LiveIndicator({ mode }: { mode: LiveMode }) {
  const label = { live: 'Live', polling: 'Refreshing periodically', connecting: 'Connecting…' }[mode];
  return html`<span class=${`live live-${mode}`} role="status" title=${mode === 'polling' ? 'This server has no event stream; the page re-reads the resource' : ''}>${label}</span>`;
}

export function Progress({ value, max, label }: { value: number; max: number; label: string }) {
  return html`<div class="progress-row"><progress value=${value} max=${max} aria-label=${label}></progress><span>${value} / ${max}</span></div>`;
}

/**
 * A button that asks before doing something that cannot be undone, in a modal dialog (focus is
 * trapped and Escape cancels, by the browser's <dialog>).
 */
export function ConfirmButton(props: {
  label: string;
  question: string;
  confirmLabel?: string;
  danger?: boolean;
  disabled?: boolean;
  onConfirm: () => void | Promise<unknown>;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  return html`<span>
    <button type="button" class=${props.danger ? 'danger' : ''} disabled=${props.disabled} onClick=${() => ref.current?.showModal()}>${props.label}</button>
    <dialog ref=${ref} aria-label=${props.label}>
      <form method="dialog">
        <p>${props.question}</p>
        <div class="row">
          <button value="cancel" autofocus>Cancel</button>
          <button
            value="ok"
            class=${props.danger ? 'danger' : 'primary'}
            onClick=${(e: Event) => {
              e.preventDefault();
              ref.current?.close();
              void props.onConfirm();
            }}
          >
            ${props.confirmLabel ?? props.label}
          </button>
        </div>
      </form>
    </dialog>
  </span>`;
}

/** A secret shown once: the value, a copy button, and a warning that it will not be shown again. */
export function OneTimeSecret({ value, label, onDone }: { value: string; label: string; onDone: () => void }) {
  const [copied, setCopied] = useState<'copied' | 'failed'>();
  return html`<div class="secret" role="region" aria-label=${label}>
    <p><strong>${label}</strong> — copy it now: it is shown only once and cannot be retrieved later.</p>
    <div class="row">
      <code class="secret-value" data-testid="secret-value">${value}</code>
      <button
        type="button"
        onClick=${async () => {
          try {
            await navigator.clipboard.writeText(value);
            setCopied('copied');
          } catch {
            setCopied('failed');
          }
        }}
      >
        ${copied === 'copied' ? 'Copied' : 'Copy'}
      </button>
      <button type="button" onClick=${onDone}>I have stored it</button>
    </div>
    ${copied === 'failed' ? html`<p role="status">The browser refused the clipboard: select the value and copy it yourself.</p>` : null}
  </div>`;
}

/** A short confirmation after an action, read out by screen readers. */
export function Notice({ text }: { text?: string }) {
  return text ? html`<p class="notice" role="status">${text}</p>` : null;
}
