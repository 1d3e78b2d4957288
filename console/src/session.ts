/**
 * The signed-in token: in this tab's session storage only (gone when the tab closes, never in a URL,
 * never in local storage shared with other tabs).
 */
const STORAGE_KEY = 'tollgate.console.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function storeToken(token: string): void {
  sessionStorage.setItem(STORAGE_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
