/**
 * Header names a client or a backend chooses are fields like any other (src/net/own-field.ts): a
 * response's `__proto__` header, sent twice, is read as a header and leaves the bag an ordinary object.
 */
import { headerBagOf } from '../../src/proxy/settlement.js';

it('keeps a header named __proto__, sent twice, as a list of its own, and the bag as it was', () => {
  const raw = ['__proto__', 'a', 'Content-Type', 'application/json', '__proto__', 'b'].map((x) =>
    Buffer.from(x),
  );
  const bag = headerBagOf(raw);
  expect(Object.getPrototypeOf(bag)).toBe(Object.prototype);
  expect(Object.keys(bag).sort()).toEqual(['__proto__', 'content-type']);
  expect(Object.getOwnPropertyDescriptor(bag, '__proto__')?.value).toEqual(['a', 'b']);
  expect(bag['content-type']).toBe('application/json');
});
