/** Whether `text` is one JSON document, as `JSON.parse` reads it: the reference the meters are held to. */
export function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
