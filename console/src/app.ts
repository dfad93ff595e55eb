import type { VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { authorizedFetch } from './api.ts';
import { ErrorBox, Loading } from './components/ui.ts';
import { credential } from './credential.ts';
import { html } from './html.ts';
import { href, useRoute } from './router.ts';
import { DENIED, SECTIONS, type PageProps, type Section } from './sections.ts';
import { SignIn } from './sign-in.ts';
import { applyTheme, currentTheme } from './theme.ts';

type Access = Record<string, 'allowed' | 'denied'>;

export function App() {
  const [signedIn, setSignedIn] = useState(() => Boolean(credential.get()));
  useEffect(() => credential.subscribe(() => setSignedIn(Boolean(credential.get()))), []);
  return signedIn ? html`<${Shell} />` : html`<${SignIn} />`;
}

/** Probes in flight at once: browsers open six connections per host, and the page's own reads must not queue behind these. */
const PROBES_AT_ONCE = 2;

/** Asks the API, section by section, what this caller may see. */
function useAccess(): Access | undefined {
  const [access, setAccess] = useState<Access>();
  useEffect(() => {
    let cancelled = false;
    const result: Access = {};
    const queue = [...SECTIONS];
    const worker = async () => {
      for (let s = queue.shift(); s && !cancelled; s = queue.shift()) {
        const response = await authorizedFetch(s.probe()).catch(() => undefined);
        void response?.body?.cancel();
        result[s.id] = response && DENIED.has(response.status) ? 'denied' : 'allowed';
      }
    };
    void Promise.all(Array.from({ length: PROBES_AT_ONCE }, worker)).then(() => !cancelled && setAccess(result));
    return () => {
      cancelled = true;
    };
  }, []);
  return access;
}

const pageCache = new Map<string, (props: PageProps) => VNode | null>();

function Shell() {
  const route = useRoute();
  const access = useAccess();
  const [theme, setTheme] = useState(currentTheme);
  const [menuOpen, setMenuOpen] = useState(false);
  const section = SECTIONS.find((s) => s.id === route.path[0]);
  const mainRef = useRef<HTMLElement>(null);
  useEffect(() => setMenuOpen(false), [route.path.join('/')]);

  const groups = ['Platform', 'Organization', 'Insights'] as const;
  const visible = (s: Section) => access?.[s.id] === 'allowed';
  return html`
    <a class="skip" href="#main" onClick=${(e: Event) => (e.preventDefault(), mainRef.current?.focus())}>Skip to content</a>
    <div class="layout">
      <header class="topbar">
        <button type="button" class="menu-toggle" aria-expanded=${menuOpen} aria-controls="nav" onClick=${() => setMenuOpen(!menuOpen)}>Menu</button>
        <a class="brand" href=${href('computers')}>agentplane</a>
        <div class="topbar-actions">
          <button
            type="button"
            aria-label=${`Switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}
            onClick=${() => {
              const next = theme === 'dark' ? 'light' : 'dark';
              applyTheme(next, true);
              setTheme(next);
            }}
          >
            ${theme === 'dark' ? 'Light' : 'Dark'}
          </button>
          <button type="button" onClick=${() => credential.clear()}>Sign out</button>
        </div>
      </header>
      <nav id="nav" class=${menuOpen ? 'open' : ''} aria-label="Sections">
        ${
          access === undefined
            ? html`<${Loading} label="Checking access…" />`
            : groups.map((g) => {
                const items = SECTIONS.filter((s) => s.group === g && visible(s));
                return items.length
                  ? html`<div class="nav-group" key=${g}>
                    <h2>${g}</h2>
                    <ul>
                      ${items.map(
                        (s) => html`<li key=${s.id}>
                          <a href=${href(s.id)} aria-current=${section?.id === s.id ? 'page' : undefined}>${s.label}</a>
                        </li>`,
                      )}
                    </ul>
                  </div>`
                  : null;
              })
        }
      </nav>
      <main id="main" ref=${mainRef} tabindex="-1">
        ${section ? html`<${LazyPage} section=${section} route=${route} />` : html`<${NotFoundPage} />`}
      </main>
    </div>
  `;
}

function LazyPage({ section, route }: { section: Section; route: PageProps['route'] }) {
  const [, setLoaded] = useState(0);
  const [error, setError] = useState<Error>();
  const Page = pageCache.get(section.id);
  useEffect(() => {
    if (Page) return;
    section
      .load()
      .then((m) => {
        pageCache.set(section.id, m.default);
        setLoaded((n) => n + 1);
      })
      .catch((e: Error) => setError(e));
  }, [section.id]);
  if (error) return html`<${ErrorBox} error=${{ status: 0, title: 'The page could not be loaded', detail: error.message }} />`;
  return Page ? html`<${Page} route=${route} />` : html`<${Loading} />`;
}

function NotFoundPage() {
  return html`<h1>Page not found</h1><p>The console has no page at this address. <a href=${href('computers')}>Go to computers</a>.</p>`;
}
