// Entry of the root Pulumi project (Pulumi.yaml `main`); Node 24 runs it with type stripping.
import { deploy } from './program.ts';

const outputs = deploy();
export const apiUrl = outputs.apiUrl;
export const firstApiKey = outputs.firstApiKey;
export const namespace = outputs.namespace;
