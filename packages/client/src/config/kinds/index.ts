/**
 * Every kind a file declares, in the order their objects are created (deletions run in reverse): the
 * portal's settings last, once the plans they offer exist.
 */
import { billingExports } from './billing-exports.js';
import { consumers } from './consumers.js';
import { plans } from './plans.js';
import { portal } from './portal.js';
import { routes } from './routes.js';
import { webhooks } from './webhooks.js';
import type { Kind } from '../kind.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own item and object types
export type AnyKind = Kind<any, any>;

export const KINDS: readonly AnyKind[] = [routes, plans, consumers, webhooks, billingExports, portal];
