/**
 * Fields of objects keyed by what a client or a backend sent (header names): read and written as own
 * properties only, so that a name such as `__proto__` is a field like any other, never the object's
 * prototype (assigning it would drop the header, or with a list, replace the prototype).
 */
export function ownField<T>(record: Record<string, T>, name: string): T | undefined {
  return Object.hasOwn(record, name) ? record[name] : undefined;
}

export function setOwnField<T>(record: Record<string, T>, name: string, value: T): void {
  // Every other name the prototype has is a writable data property, which assigning shadows.
  if (name === '__proto__')
    Object.defineProperty(record, name, { value, enumerable: true, writable: true, configurable: true });
  else record[name] = value;
}
