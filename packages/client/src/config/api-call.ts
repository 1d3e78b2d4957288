/** A management call's answer, or the error it answered, as `tollgate apply` reports it. */

export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = 'ApiCallError';
  }
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The documented answer of a call, or an ApiCallError naming its status, code and message. */
export async function answerOf<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (error === undefined && response.ok) return data as T;
  const body = (error ?? {}) as {
    error?: string;
    code?: string;
    details?: { field: string; message: string }[];
  };
  const details = (body.details ?? []).map((d) => `${d.field} ${d.message}`).join('; ');
  throw new ApiCallError(
    response.status,
    body.code ?? 'unexpected_answer',
    (body.error ?? response.statusText) + (details ? ` (${details})` : ''),
  );
}

/** Every item of a paginated list, following `nextCursor`. */
export async function everyPage<T>(
  page: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  do {
    const { items, nextCursor } = await page(cursor);
    all.push(...items);
    cursor = nextCursor;
  } while (cursor !== undefined);
  return all;
}
