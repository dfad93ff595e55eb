import { createClient } from '../../clients/typescript/src/index.ts';
import { credential, signOutReason } from './credential.ts';

/** The one client of the console: every call typed from the OpenAPI document. */
export const api = createClient({ baseUrl: '', credential: () => credential.get() });

/** An error answer of the API: its status, title and `detail`, shown as they are. */
export class ApiProblem extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  constructor(status: number, title: string, detail: string) {
    super(detail);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

export function problemOf(response: Response, body: unknown): ApiProblem {
  const b = (body ?? {}) as { title?: unknown; detail?: unknown };
  const title = typeof b.title === 'string' ? b.title : response.statusText || `HTTP ${response.status}`;
  const detail = typeof b.detail === 'string' ? b.detail : typeof body === 'string' && body ? body : `The server answered ${response.status}`;
  return new ApiProblem(response.status, title, detail);
}

/**
 * The data of a call, or an ApiProblem. A 401 signs the console out (the credential was revoked,
 * rotated or expired) and keeps the API's reason for the sign-in page.
 */
export async function must<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (e) {
    throw new ApiProblem(0, 'Network error', `The control plane could not be reached: ${(e as Error).message}`);
  }
  if (!result.response.ok) {
    const problem = problemOf(result.response, result.error);
    if (problem.status === 401) {
      signOutReason.value = problem.detail;
      credential.clear();
    }
    throw problem;
  }
  return result.data as T;
}

/** A raw GET with the credential, for paths the typed client cannot build (the event streams, probes). */
export function authorizedFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const value = credential.get();
  if (value) headers.set('Authorization', `Bearer ${value}`);
  return fetch(path, { ...init, headers });
}
