/**
 * Analytics and readiness routes answer errors as `{title, detail, status, requestId}`; the
 * /api/v0 API as `{detail, status, title, metadata?}`. Decided by path so unknown routes match too.
 */
export function usesRequestErrorBody(path: string): boolean {
  return path.startsWith('/api/v1/analytics') || path.startsWith('/api/organization/');
}
