/**
 * The credential the console calls the API with: an API key or a JWT, kept in this tab's session
 * storage (gone when the tab closes; never in a URL, a cookie or local storage).
 */
const KEY = 'agentplane.credential';

const listeners = new Set<() => void>();

export const credential = {
  get: (): string | undefined => sessionStorage.getItem(KEY) ?? undefined,
  set(value: string) {
    sessionStorage.setItem(KEY, value);
    listeners.forEach((l) => l());
  },
  clear() {
    sessionStorage.removeItem(KEY);
    listeners.forEach((l) => l());
  },
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

/** Why the last credential stopped working (a 401's detail), shown on the sign-in page. */
export const signOutReason = { value: '' };
