import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from './api.ts';

export interface Resource<T> {
  data?: T;
  error?: ApiProblem;
  loading: boolean;
  reload(): Promise<void>;
  set(update: (data: T | undefined) => T | undefined): void;
}

/** Loads once per change of `deps`; `reload` re-reads (keeping the last data on screen meanwhile). */
export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiProblem; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await loadRef.current();
      if (mine === generation.current) setState({ data, loading: false });
    } catch (e) {
      const error = e instanceof ApiProblem ? e : new ApiProblem(0, 'Error', (e as Error).message);
      if (mine === generation.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, []);
  useEffect(() => {
    setState({ loading: true });
    void reload();
  }, deps);
  const set = useCallback((update: (data: T | undefined) => T | undefined) => setState((s) => ({ ...s, data: update(s.data) })), []);
  return { ...state, reload, set };
}

/** Runs an action, keeping its error and whether it runs, for buttons and forms. */
export function useAction<A extends unknown[], R>(action: (...args: A) => Promise<R>) {
  const [state, setState] = useState<{ busy: boolean; error?: ApiProblem; result?: R }>({ busy: false });
  const run = async (...args: A): Promise<R | undefined> => {
    setState({ busy: true });
    try {
      const result = await action(...args);
      setState({ busy: false, result });
      return result;
    } catch (e) {
      setState({ busy: false, error: e instanceof ApiProblem ? e : new ApiProblem(0, 'Error', (e as Error).message) });
      return undefined;
    }
  };
  return { ...state, run, reset: () => setState({ busy: false }) };
}
