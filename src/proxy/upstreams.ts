import { Pool } from 'undici';

export interface UpstreamOptions {
  /** Most keep-alive connections to one backend origin; further requests queue. */
  readonly connections: number;
  /** Backend answer deadline for requests that set none of their own (UPSTREAM_TIMEOUT_MS). */
  readonly timeoutMs: number;
}

/**
 * One backend origin's connection pool, shared by every route (and the catch-all) forwarding to it.
 * A request holds it from the moment it is routed until it is finished, so a pool the table no longer
 * uses closes only once the requests routed to it have ended.
 */
export class Upstream {
  readonly pool: Pool;
  private holders = 0;
  private retired = false;

  constructor(
    readonly origin: string,
    options: UpstreamOptions,
  ) {
    this.pool = new Pool(origin, {
      connections: options.connections,
      connect: { timeout: Math.min(10_000, options.timeoutMs) },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  hold(): void {
    this.holders++;
  }

  release(): void {
    if (--this.holders === 0 && this.retired) void this.pool.close();
  }

  /** No route uses it any more: closed once nothing holds it (undici lets dispatched requests finish). */
  retire(): void {
    this.retired = true;
    if (this.holders === 0) void this.pool.close();
  }
}

/** The pools of the origins the route table (and UPSTREAM_URL) name: one per origin. */
export class Upstreams {
  private byOrigin = new Map<string, Upstream>();

  constructor(private readonly options: UpstreamOptions) {}

  /**
   * The pools of a new table's origins: those already open are kept, new ones opened; the others are
   * retired. Returns them by origin.
   */
  use(origins: Iterable<string>): ReadonlyMap<string, Upstream> {
    const next = new Map<string, Upstream>();
    for (const origin of origins)
      next.set(origin, this.byOrigin.get(origin) ?? new Upstream(origin, this.options));
    for (const [origin, upstream] of this.byOrigin) if (!next.has(origin)) upstream.retire();
    this.byOrigin = next;
    return next;
  }

  /** After the server has drained: every pool closed. */
  async close(): Promise<void> {
    await Promise.all([...this.byOrigin.values()].map((upstream) => upstream.pool.close()));
  }
}
