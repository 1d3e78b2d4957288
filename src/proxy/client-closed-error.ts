/** Why Tollgate cancelled a backend request: its client closed the connection. */
export class ClientClosedError extends Error {
  readonly code = 'TOLLGATE_CLIENT_CLOSED';
  constructor() {
    super('client closed the connection');
  }
}
