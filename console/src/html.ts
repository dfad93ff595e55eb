import htm from 'htm';
import { h, type VNode } from 'preact';

/** JSX-like templates without a build step: html`<${Component} prop=${value} />`. */
export const html = htm.bind(h) as (strings: TemplateStringsArray, ...values: unknown[]) => VNode;
