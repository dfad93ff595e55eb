import { render } from 'preact';
import { App } from './app.ts';
import { html } from './html.ts';
import { applyTheme, currentTheme } from './theme.ts';

applyTheme(currentTheme());
const root = document.getElementById('app')!;
root.textContent = '';
render(html`<${App} />`, root);
