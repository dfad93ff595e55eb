/** The few calls `agentplane ci run` makes to the control plane's public API, as the CI's service-account key. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function apiClient(baseUrl: string, apiKey: string) {
  const root = baseUrl.replace(/\/+$/, '');
  return async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${root}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      throw new ApiError(0, `cannot reach ${root}: ${cause?.code ?? (err as Error).message}`);
    }
    const text = await res.text();
    const json = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) {
      const detail = (json as { detail?: string } | undefined)?.detail ?? text.slice(0, 300);
      throw new ApiError(res.status, `${method} ${path} answered ${res.status}: ${detail}`);
    }
    return json as T;
  };
}
export type ApiCall = ReturnType<typeof apiClient>;
