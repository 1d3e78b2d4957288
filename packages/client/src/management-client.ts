import createFetchClient, { type Client } from 'openapi-fetch';
import type { TollgateConnection } from './connection.js';
import type { paths } from './generated/management-api.js';

/** Typed calls of every management operation, by method and OpenAPI path. */
export type TollgateClient = Client<paths>;

/**
 * A client of the management API, typed from its OpenAPI document:
 * `client.GET('/consumer-api-key/{consumerApiKeyId}', { params: { path: { consumerApiKeyId } } })`
 * resolves `{data}` (the documented answer) or `{error}` (the error envelope) with the `response`.
 */
export function createClient(connection: TollgateConnection): TollgateClient {
  return createFetchClient<paths>({
    baseUrl: connection.baseUrl,
    headers: { authorization: `Bearer ${connection.token}` },
  });
}
