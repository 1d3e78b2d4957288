/**
 * `${ENV_VAR}` in the file's strings: a value that differs between environments (an upstream URL) or
 * a secret, read from the environment of `tollgate apply`, so neither lives in Git. `$${` writes `${`.
 * Secrets (a billing export's credential, the portal's OIDC client secret) stay references until they
 * are sent: they are never printed. Nor is any other variable's value: whatever apply prints (a fault,
 * the API's answer) shows the reference in its place, as a pull request's dry run may print any of them.
 */
import type { ConfigProblem } from './config-error.js';
import { fieldName, type FieldPath } from './config-file.js';

const REFERENCE = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

export type Environment = Readonly<Record<string, string | undefined>>;

/** Whether the field holds a secret: kept as its reference, checked by the schema, resolved when sent. */
export const isSecretField = (path: FieldPath): boolean =>
  (path.length === 3 && path[0] === 'billingExports' && path[2] === 'credential') ||
  fieldName(path) === 'portal.oidc.clientSecret';

/** Text with each of `values` (variable to value) written as its `${VAR}` reference, longest first. */
export function hiding(values: ReadonlyMap<string, string>): (text: string) => string {
  const shown = [...values].filter(([, value]) => value !== '').sort(([, a], [, b]) => b.length - a.length);
  return (text) => shown.reduce((hidden, [name, value]) => hidden.replaceAll(value, `\${${name}}`), text);
}

/**
 * The data with every reference outside secrets replaced by its variable's value, and how to hide
 * those values again in what is printed.
 */
export function resolveReferences(
  data: unknown,
  env: Environment,
  lineOf: (path: FieldPath) => number,
): { resolved: unknown; problems: ConfigProblem[]; hide: (text: string) => string } {
  const problems: ConfigProblem[] = [];
  const used = new Map<string, string>();
  const visit = (value: unknown, path: (string | number)[]): unknown => {
    if (typeof value === 'string') {
      if (isSecretField(path)) return value;
      return value.replace(REFERENCE, (whole, escaped: string, name: string) => {
        if (escaped) return whole.slice(1);
        const found = env[name];
        if (found === undefined) {
          problems.push({ line: lineOf(path), field: fieldName(path), message: `\${${name}} is not set` });
          return whole;
        }
        used.set(name, found);
        return found;
      });
    }
    if (Array.isArray(value)) return value.map((item, i) => visit(item, [...path, i]));
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, visit(v, [...path, k])]));
    return value;
  };
  return { resolved: visit(data, []), problems, hide: hiding(used) };
}

/** The variable a secret's reference names, and its value (undefined: not set). */
export function secretOf(reference: string, env: Environment): { name: string; value: string | undefined } {
  const name = WHOLE_REFERENCE.exec(reference)?.[1];
  if (name === undefined) throw new Error(`not a reference: ${reference}`);
  return { name, value: env[name] };
}
