/**
 * JSON whose object members keep the order the caller wrote them in. JavaScript objects put
 * integer-like names first (`{"b":1,"2":0}` parses to `{2:0,b:1}`), so a value the API returns
 * "as given" (a key's `metadata`) is read from the request text and travels as text: stored, and
 * written into responses and audit entries without passing through an object again.
 */
import type { Response } from 'express';

/** JSON text placed as it is into a response written by `jsonText`. */
export class RawJson {
  constructor(readonly text: string) {}
}

interface ObjectFrame {
  readonly members: Map<string, string>;
  /** The name read, its value not yet; undefined while a name is expected. */
  name: string | undefined;
}
type Frame = ObjectFrame | string[];

const STRING = /"(?:[^"\\]|\\.)*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

function token(pattern: RegExp, text: string, at: number): string {
  pattern.lastIndex = at;
  return pattern.exec(text)![0];
}

/**
 * The members of the JSON object `text` (which `JSON.parse` has already accepted), each value written
 * as `JSON.stringify(JSON.parse(…))` would write it, except that every object keeps its members in
 * the order written. A repeated name keeps its first place and its last value, as in `JSON.parse`.
 * Iterative, so nesting as deep as the body allows costs no stack.
 */
export function membersAsWritten(text: string): ReadonlyMap<string, string> {
  const stack: Frame[] = [];
  let top: ReadonlyMap<string, string> = new Map();
  const complete = (value: string, members?: Map<string, string>): void => {
    const parent = stack.at(-1);
    if (parent === undefined) top = members ?? new Map();
    else if (Array.isArray(parent)) parent.push(value);
    else {
      parent.members.set(parent.name!, value);
      parent.name = undefined;
    }
  };
  for (let i = 0; i < text.length;) {
    const c = text[i]!;
    if (c === '{') {
      stack.push({ members: new Map(), name: undefined });
      i++;
    } else if (c === '[') {
      stack.push([]);
      i++;
    } else if (c === '}') {
      const { members } = stack.pop() as ObjectFrame;
      complete(
        `{${[...members].map(([name, value]) => `${JSON.stringify(name)}:${value}`).join(',')}}`,
        members,
      );
      i++;
    } else if (c === ']') {
      complete(`[${(stack.pop() as string[]).join(',')}]`);
      i++;
    } else if (c === '"') {
      const raw = token(STRING, text, i);
      const value = JSON.parse(raw) as string;
      const parent = stack.at(-1);
      if (parent !== undefined && !Array.isArray(parent) && parent.name === undefined) parent.name = value;
      else complete(JSON.stringify(value));
      i += raw.length;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const raw = token(NUMBER, text, i);
      complete(JSON.stringify(Number(raw)));
      i += raw.length;
    } else if (c === 't' || c === 'f' || c === 'n') {
      const raw = token(LITERAL, text, i);
      complete(raw);
      i += raw.length;
    } else {
      // Whitespace, commas and colons carry nothing the structure above doesn't.
      i++;
    }
  }
  return top;
}

/** `JSON.stringify` for response bodies, with each `RawJson` written as its text. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : jsonText(item))).join(',')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const members = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${members.map(([name, v]) => `${JSON.stringify(name)}:${jsonText(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Answers `body` as JSON, as `res.json` would, keeping the text of its `RawJson` parts. */
export function sendJson(res: Response, body: unknown): void {
  res.type('application/json').send(jsonText(body));
}
