/** The signed-in user, their consumer and the team's brand, for every page of the portal. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me } from './portal-types';

export const PortalContext = createContext<Me | undefined>(undefined);

export function usePortal(): Me {
  const me = useContext(PortalContext);
  if (!me) throw new Error('usePortal: outside the signed-in portal');
  return me;
}
