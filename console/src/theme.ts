/** Light or dark: the system's choice until the user picks one (kept in local storage; not a secret). */
const KEY = 'agentplane.theme';

export type Theme = 'light' | 'dark';

export function currentTheme(): Theme {
  const saved = localStorage.getItem(KEY);
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(theme: Theme, save = false) {
  document.documentElement.dataset.theme = theme;
  if (save) localStorage.setItem(KEY, theme);
}
