/**
 * A filter form's fields as typed, not yet applied: they start from the filters the URL holds, follow
 * them when the URL changes (back, a link, Clear), and change with each input.
 *
 * The draft follows the URL in the very render that shows the new filters: reset in an effect, after
 * the next frame, it could land after a field typed at once and undo it. Each input builds on the
 * latest draft, never on the one a handler saw when it was made.
 */
import { useRef, useState } from 'preact/hooks';

type Field = HTMLInputElement | HTMLSelectElement;

export function useDraft<T extends object>(applied: T) {
  const key = JSON.stringify(applied);
  const following = useRef(key);
  const draft = useRef(applied);
  const [, typed] = useState(0);
  if (following.current !== key) {
    following.current = key;
    draft.current = applied;
  }
  /** An input handler that sets one field from the control's value. */
  const field = (name: keyof T) => (e: { currentTarget: Field }) => {
    draft.current = { ...draft.current, [name]: e.currentTarget.value };
    typed((n) => n + 1);
  };
  return { draft: draft.current, field };
}
