import type { BodyMatchRule } from './usage-pricing.js';
import { parsePointer, resolvePointer, type JsonPointer } from './json-pointer.js';

export interface BodyMatch {
  pointer: JsonPointer;
  values: ReadonlySet<string>;
}

const compiled = new WeakMap<BodyMatchRule, BodyMatch | undefined>();

/** The rule compiled once, as a plan holds it (a plan's rules live as long as its key is cached). */
export function bodyMatchOf(rule: BodyMatchRule): BodyMatch | undefined {
  if (!compiled.has(rule)) compiled.set(rule, compileBodyMatch(rule));
  return compiled.get(rule);
}

export function compileBodyMatch(rule: BodyMatchRule): BodyMatch | undefined {
  const pointer = parsePointer(rule.pointer);
  return pointer && { pointer, values: new Set(rule.values) };
}

/** Whether the parsed body (undefined when absent or not JSON) holds one of the strings at the pointer. */
export function bodyMatches(body: unknown, match: BodyMatch): boolean {
  const value = resolvePointer(body, match.pointer);
  return typeof value === 'string' && match.values.has(value);
}
