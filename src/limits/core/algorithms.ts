import type { Algorithm } from '../../plans/plan.js';
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import type { LimitAlgorithm } from './limit-algorithm.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

/** Each algorithm a plan's limit may name, by that name (a new algorithm is a module and a line here). */
export const ALGORITHM_OF: Readonly<Record<Algorithm, LimitAlgorithm<unknown>>> = {
  fixed: fixedWindow as LimitAlgorithm<unknown>,
  sliding: slidingWindow as LimitAlgorithm<unknown>,
  tokenBucket: tokenBucket as LimitAlgorithm<unknown>,
  concurrency: concurrency as LimitAlgorithm<unknown>,
};
