/**
 * The messages Envoy's filters send to Tollgate's gRPC listener (EXTAUTH_GRPC_PORT), as proto-loader
 * takes them: no import of Tollgate's, so the bench's load generator (bench/peers/grpc-check-load.ts,
 * run by Node alone) sends the very messages the tests send.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- messages as proto-loader decodes them
export type Message = any;

/** A CheckRequest as Envoy's ext_authz filter sends one for `GET target` from 198.51.100.7. */
export function checkRequest(target: string, headers: Record<string, string>, http: Message = {}): Message {
  return {
    attributes: {
      source: { address: { socket_address: { address: '198.51.100.7', port_value: 51_234 } } },
      destination: { address: { socket_address: { address: '10.0.0.2', port_value: 8000 } } },
      request: {
        time: { seconds: Math.floor(Date.now() / 1000) },
        http: {
          id: String(Math.random()),
          method: 'GET',
          headers: {
            ':authority': 'api.example.com',
            ':method': 'GET',
            ':path': target,
            ':scheme': 'http',
            'x-forwarded-proto': 'http',
            ...headers,
          },
          path: target,
          host: 'api.example.com',
          scheme: 'http',
          protocol: 'HTTP/1.1',
          ...http,
        },
      },
    },
  };
}

/** A RateLimitRequest as Envoy's rate limit filter sends one: each action list's entries a descriptor. */
export const rateLimitRequest = (domain: string, entries: [string, string][][], hits?: number): Message => ({
  domain,
  descriptors: entries.map((list) => ({ entries: list.map(([key, value]) => ({ key, value })) })),
  ...(hits !== undefined && { hits_addend: hits }),
});
