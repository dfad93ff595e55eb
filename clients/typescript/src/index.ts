import createFetchClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.ts';

export type { components, operations, paths } from './schema.ts';

/** The API's error body (`detail` says what went wrong and what to do). */
export type ApiErrorBody = components['schemas']['Error'];

export type AgentplaneClient = Client<paths>;

export interface ClientOptions {
  /** The control plane's address, e.g. `http://localhost:8080` (empty: the page's own origin). */
  baseUrl: string;
  /** An API key (`apk_...`) or a JWT access token, or a function read on every request. */
  credential: string | (() => string | undefined);
  fetch?: typeof fetch;
}

/**
 * A client of every operation in the OpenAPI document, typed from it: paths, parameters, bodies
 * and responses. Each call resolves to `{data}` or `{error}` (the API's error body) and `response`.
 */
export function createClient(options: ClientOptions): AgentplaneClient {
  const client = createFetchClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });
  client.use({
    onRequest({ request }) {
      const credential = typeof options.credential === 'function' ? options.credential() : options.credential;
      if (credential) request.headers.set('Authorization', `Bearer ${credential}`);
      return request;
    },
  });
  return client;
}
