/**
 * Reads a configuration file, YAML or JSON (JSON is YAML), keeping where each value was written so a
 * fault names its line.
 */
import { readFile } from 'node:fs/promises';
import { isMap, isNode, isPair, isScalar, LineCounter, parseDocument, visit, type Document } from 'yaml';
import { ConfigFileError } from './config-error.js';
import type { FieldPath } from './config-file.js';

export interface LoadedConfig {
  readonly file: string;
  /** The file's content as plain data. */
  readonly data: unknown;
  /** The line (from 1) of the field at `path`, or of its nearest enclosing field that the file holds. */
  lineOf(path: FieldPath): number;
}

export function parseConfig(file: string, text: string): LoadedConfig {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new ConfigFileError(
      file,
      document.errors.map((e) => ({ line: lineCounter.linePos(e.pos[0]).line, message: e.message })),
    );
  }
  const lineAt = (offset: number) => lineCounter.linePos(offset).line;
  let data: unknown;
  try {
    data = document.toJS();
  } catch (err) {
    // An alias bomb: the yaml package refuses to expand more aliases than its bound (maxAliasCount).
    throw new ConfigFileError(file, [
      { line: lineAt(firstAliasOffset(document)), message: (err as Error).message },
    ]);
  }
  return {
    file,
    data,
    lineOf: (path) => lineAt(offsetOf(document, path)),
  };
}

export async function loadConfig(file: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(file, [{ line: 1, message: `cannot be read: ${(err as Error).message}` }]);
  }
  return parseConfig(file, text);
}

/** Where the field at `path` starts: its key in a mapping, its item in a list; else its parent's. */
function offsetOf(document: Document, path: FieldPath): number {
  for (let depth = path.length; depth > 0; depth--) {
    const parent = document.getIn(path.slice(0, depth - 1), true);
    const last = path[depth - 1];
    if (isMap(parent)) {
      const pair = parent.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === last);
      if (pair && isNode(pair.key) && pair.key.range) return pair.key.range[0];
    }
    const node = document.getIn(path.slice(0, depth), true);
    if (isNode(node) && node.range) return node.range[0];
  }
  return document.contents?.range?.[0] ?? 0;
}

/** Where the file's first alias (`*name`) is; the document's start if it has none. */
function firstAliasOffset(document: Document): number {
  let offset = document.contents?.range?.[0] ?? 0;
  visit(document, {
    Alias(_key, node) {
      offset = node.range?.[0] ?? offset;
      return visit.BREAK;
    },
  });
  return offset;
}
