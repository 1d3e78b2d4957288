export type { TollgateConnection } from './connection.js';
export { createClient, type TollgateClient } from './management-client.js';
export type { components, operations, paths } from './generated/management-api.js';
export { verifyKey, TollgateVerifyError } from './verify.js';
export type { Period, VerifyAnswer, VerifyCode, VerifyLimit, VerifyRequest } from './verify-types.js';
export type { TollgateMiddlewareOptions } from './gate.js';
export { tollgateExpress } from './express.js';
export { tollgateFastify } from './fastify.js';
export { mintToken, type MintTokenOptions } from './generated/mint-token.js';
