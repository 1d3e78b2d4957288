/**
 * A filter form's fields as typed, not yet applied: they start from the filters the URL holds, follow
 * them when the URL changes (back, a link, Clear), and change with each input.
 */
import { useEffect, useState } from 'preact/hooks';

type Field = HTMLInputElement | HTMLSelectElement;

export function useDraft<T extends object>(applied: T) {
  const [draft, setDraft] = useState(applied);
  const key = JSON.stringify(applied);
  useEffect(() => setDraft(applied), [key]);
  /** An input handler that sets one field from the control's value. */
  const field = (name: keyof T) => (e: { currentTarget: Field }) =>
    setDraft({ ...draft, [name]: e.currentTarget.value });
  return { draft, setDraft, field };
}
