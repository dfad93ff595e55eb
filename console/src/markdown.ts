import DOMPurify from 'dompurify';
import { Marked } from 'marked';

/**
 * Markdown from a repository's content, rendered for the console: parsed by marked (GitHub
 * flavour), sanitized by DOMPurify before it touches the document, then code blocks highlighted
 * (highlight.js, each language's grammar loaded when a page first shows it) and Mermaid blocks
 * drawn as SVG (Mermaid loaded with the first diagram). Nothing here runs for a page without
 * code or diagrams, and the shell never loads any of it.
 */

const marked = new Marked({ gfm: true, async: false });

export interface RenderOptions {
  /** A console address for a relative link of the Markdown (a wiki page's `.md` link), or undefined to leave it as it is. */
  resolveLink?(href: string): string | undefined;
  dark: boolean;
}

/** Common names of code fences, by highlight.js's grammar file. */
const LANGUAGE_ALIASES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  sh: 'bash',
  zsh: 'bash',
  console: 'shell',
  yml: 'yaml',
  golang: 'go',
  rs: 'rust',
  rb: 'ruby',
  html: 'xml',
  svg: 'xml',
  toml: 'ini',
  'c++': 'cpp',
  hpp: 'cpp',
  h: 'c',
  md: 'markdown',
  make: 'makefile',
  text: 'plaintext',
  txt: 'plaintext',
};

/** The sanitized HTML of `markdown`, as a fragment not yet in the document. */
function parseMarkdown(markdown: string): DocumentFragment {
  const raw = marked.parse(markdown) as string;
  return DOMPurify.sanitize(raw, { RETURN_DOM_FRAGMENT: true, FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'] });
}

/**
 * Renders `markdown` into `target` (its children replaced): links rewritten, tables and code
 * blocks made keyboard-scrollable, code highlighted, diagrams drawn. Resolves once all is drawn.
 */
export async function renderMarkdown(target: HTMLElement, markdown: string, options: RenderOptions): Promise<void> {
  const fragment = parseMarkdown(markdown);
  for (const a of fragment.querySelectorAll<HTMLAnchorElement>('a[href]')) {
    const href = a.getAttribute('href')!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) {
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
    } else if (!href.startsWith('#')) {
      const local = options.resolveLink?.(href);
      if (local) a.setAttribute('href', local);
    }
  }
  for (const table of fragment.querySelectorAll('table')) {
    const wrap = document.createElement('div');
    wrap.className = 'table-wrap';
    wrap.tabIndex = 0;
    wrap.setAttribute('role', 'region');
    wrap.setAttribute('aria-label', 'Table');
    table.replaceWith(wrap);
    wrap.append(table);
  }
  const blocks = [...fragment.querySelectorAll<HTMLElement>('pre > code')];
  for (const code of blocks) code.parentElement!.tabIndex = 0;
  target.replaceChildren(fragment);
  const language = (code: HTMLElement) => /(?:^|\s)language-(\S+)/.exec(code.className)?.[1]?.toLowerCase();
  const diagrams = blocks.filter((c) => language(c) === 'mermaid');
  const highlighted = blocks.filter((c) => language(c) && language(c) !== 'mermaid');
  await Promise.all([drawDiagrams(diagrams, options.dark), highlight(highlighted, language)]);
}

let hljsLoad: Promise<typeof import('hljs/core')['default']> | undefined;
const grammars = new Map<string, Promise<boolean>>();

async function highlight(blocks: HTMLElement[], language: (code: HTMLElement) => string | undefined) {
  if (!blocks.length) return;
  const hljs = await (hljsLoad ??= import('hljs/core').then((m) => m.default));
  await Promise.all(
    blocks.map(async (code) => {
      const asked = language(code)!;
      const name = LANGUAGE_ALIASES[asked] ?? asked;
      if (!/^[a-z0-9-]+$/.test(name)) return;
      let loaded = grammars.get(name);
      if (!loaded) {
        loaded = import(/* a grammar file of highlight.js */ `hljs/languages/${name}.min.js`)
          .then((m: { default: unknown }) => (hljs.registerLanguage(name, m.default), true))
          .catch(() => false);
        grammars.set(name, loaded);
      }
      if (!(await loaded)) return; // A language highlight.js has no grammar for stays plain text.
      const { value } = hljs.highlight(code.textContent ?? '', { language: name, ignoreIllegals: true });
      // highlight.js escapes the code and adds spans; sanitized again all the same, to spans with classes only.
      code.innerHTML = DOMPurify.sanitize(value, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] });
      code.classList.add('hljs');
    }),
  );
}

let mermaidLoad: Promise<typeof import('mermaid')['default']> | undefined;
let diagramCount = 0;

async function drawDiagrams(blocks: HTMLElement[], dark: boolean) {
  if (!blocks.length) return;
  const mermaid = await (mermaidLoad ??= import('mermaid').then((m) => m.default));
  // strict: labels are text (no HTML, no click handlers); SVG text labels need no foreignObject.
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: dark ? 'dark' : 'default', htmlLabels: false, flowchart: { htmlLabels: false } });
  // One at a time: Mermaid keeps global state while it lays a diagram out.
  for (const code of blocks) {
    const pre = code.parentElement!;
    // Mermaid puts label text into the live document while it measures it, before its own
    // sanitizing: a tag in a label would load there (an <img>'s handler, stopped only by the CSP).
    // Every "<" that opens a tag becomes Mermaid's entity for "<", shown as text; arrows keep theirs.
    const text = code.textContent ?? '';
    const source = text.replace(/<(?=[A-Za-z/!?])/g, '#lt;');
    const figure = document.createElement('figure');
    figure.className = 'diagram';
    try {
      const { svg } = await mermaid.render(`mermaid-${++diagramCount}`, source);
      const drawn = DOMPurify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true }, ADD_TAGS: ['style'], RETURN_DOM_FRAGMENT: true });
      const element = drawn.querySelector('svg');
      if (!element) throw new Error('Mermaid drew nothing');
      element.setAttribute('role', 'img');
      element.setAttribute('aria-label', `Diagram: ${diagramSummary(text)}`);
      figure.append(drawn);
      const details = document.createElement('details');
      const summary = document.createElement('summary');
      summary.textContent = 'Diagram source';
      details.append(summary, pre.cloneNode(true));
      figure.append(details);
      pre.replaceWith(figure);
    } catch (e) {
      const error = document.createElement('p');
      error.className = 'error';
      error.textContent = `The diagram could not be drawn: ${(e as Error).message}`;
      pre.before(error);
    }
  }
}

/** A short description of a Mermaid diagram for screen readers: its kind and its node labels. */
function diagramSummary(source: string): string {
  const kind = source.trim().split(/\s/)[0] ?? 'diagram';
  const labels = [...source.matchAll(/\[\s*"?([^"\]]+)"?\s*\]/g)].map((m) => m[1]!.trim());
  return labels.length ? `${kind} of ${labels.slice(0, 12).join(', ')}${labels.length > 12 ? ', …' : ''}` : kind;
}
