/** Loading what a page shows: the data, the API's error, and a reload after a change. */
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api-error';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: ApiError | undefined;
  readonly loading: boolean;
  reload(): void;
}

/**
 * Runs `load` whenever `deps` change (the previous run aborted) or `reload` is called. The data on
 * screen stays until the next arrives, but `loading` is true from the very render that changed `deps`:
 * a control acting on the data (a pager's next cursor) must not act on the previous answer.
 */
export function useApi<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{
    data?: T;
    error?: ApiError;
    loading: boolean;
    for?: readonly unknown[];
  }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  const current = [...deps, generation];
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    // A load that throws before its first await (an id that cannot be sent) fails like any other.
    new Promise<T>((resolve) => resolve(load(controller.signal))).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, loading: false, for: current });
      },
      (err: unknown) => {
        if (controller.signal.aborted) return;
        const error = err instanceof ApiError ? err : new ApiError(0, 'console_error', String(err));
        setState({ error, loading: false, for: current });
      },
    );
    return () => controller.abort();
  }, current);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  const answered = state.for !== undefined && state.for.every((d, i) => Object.is(d, current[i]));
  return { data: state.data, error: state.error, loading: state.loading || !answered, reload };
}

/** An action's progress: run it, and keep its error to show. */
export function useAction(): {
  readonly busy: boolean;
  readonly error: ApiError | undefined;
  run<T>(work: () => Promise<T>): Promise<T | undefined>;
  /** Shows a refusal the console itself made, before any request. */
  fail(message: string): void;
  clear(): void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const run = useCallback(async <T>(work: () => Promise<T>) => {
    setBusy(true);
    setError(undefined);
    try {
      return await work();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'console_error', String(err)));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  const fail = useCallback((message: string) => setError(new ApiError(0, 'console_error', message)), []);
  return { busy, error, run, fail, clear: useCallback(() => setError(undefined), []) };
}
