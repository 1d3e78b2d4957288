/**
 * What the gRPC listener holds for calls whose message has not all arrived (grpc-unary.ts), bounded per
 * connection and for the whole listener, so that clients who open streams and stall them hold no more
 * than that; a stream that would pass a bound is refused (docs/decisions/0247-grpc-calls-bounded.md).
 */
export class MessageBudget {
  private held = 0;

  constructor(
    /** The most bytes held at once. */
    private readonly most: number,
    /** The listener's budget, which a connection's takes from too. */
    private readonly whole?: MessageBudget,
  ) {}

  /** Holds `bytes` more, here and in the whole; false, holding nothing, when either would pass its bound. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.most) return false;
    if (this.whole !== undefined && !this.whole.take(bytes)) return false;
    this.held += bytes;
    return true;
  }

  /** Gives back `bytes` taken. */
  give(bytes: number): void {
    this.held -= bytes;
    this.whole?.give(bytes);
  }
}
