/**
 * What a page hands the next one when it navigates there: a message to announce (a key deleted, a
 * plan saved), and a new key's secret to show once. Held in memory only (never in the URL or in
 * storage) and taken once, by the page that opens next.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Handoff {
  readonly message?: string;
  readonly created?: { readonly keyId: string; readonly secret: string };
}

let pending: Handoff = {};

export function handOff(handoff: Handoff): void {
  pending = handoff;
}

/**
 * What was handed to this page, and its status message: the handed one is set just after the page is
 * drawn, since a live region announces what changes in it, not what it held when it appeared.
 */
export function useHandoff(): {
  readonly created: Handoff['created'];
  readonly message: string;
  setMessage(message: string): void;
} {
  const [handoff] = useState(() => {
    const taken = pending;
    pending = {};
    return taken;
  });
  const [message, setMessage] = useState('');
  useEffect(() => setMessage(handoff.message ?? ''), []);
  return { created: handoff.created, message, setMessage };
}
