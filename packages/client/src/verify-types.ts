/**
 * The verify call's request and answer (docs/guides/verify-and-client.md), as the OpenAPI document states
 * them: generated with the management types (scripts/generate-api-types.mjs), named here.
 */
import type { components } from './generated/management-api.js';

/** What a request would be, as the proxy would see it. */
export type VerifyRequest = components['schemas']['VerifyRequest'];
/** The decision: `valid` when the proxy would forward the request (it is then counted). */
export type VerifyAnswer = components['schemas']['VerifyResponse'];
/** `ok`, or the error code the proxy would answer the same request with. */
export type VerifyCode = VerifyAnswer['code'];
/** Where one limit of the key or its consumer stands after the decision. */
export type VerifyLimit = VerifyAnswer['limits'][number];
/** A limit's period (a concurrency limit has none: null). */
export type Period = NonNullable<VerifyLimit['period']>;
