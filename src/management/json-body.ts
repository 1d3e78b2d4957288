/**
 * Reads a management request body: JSON only, at most 64 KiB, parsed here rather than by express.json
 * so each failure has its own error code in the OpenAPI document. JSON.parse makes `__proto__` an ordinary own property
 * (it never reaches a prototype), and the schemas' `additionalProperties: false` then refuses it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../errors.js';
import { membersAsWritten } from './json-as-written.js';

export const MAX_BODY_BYTES = 64 * 1024;

/** Bytes that are not UTF-8 make the body malformed JSON (RFC 8259 §8.1) instead of U+FFFD in a name. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const readRaw = express.raw({ type: () => true, limit: MAX_BODY_BYTES, inflate: false });

function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const [mediaType = '', ...params] = header.split(';').map((part) => part.trim().toLowerCase());
  if (mediaType !== 'application/json') return false;
  // JSON is UTF-8 (RFC 8259); a declared charset may only say so.
  return params.every((p) => !p.startsWith('charset=') || /^charset="?utf-8"?$/.test(p));
}

function bodyReadError(err: unknown): AppError {
  const type = (err as { type?: unknown }).type;
  if (type === 'entity.too.large') return new AppError('payload_too_large');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new AppError(
      'unsupported_media_type',
      'Compressed request bodies are not accepted; send plain application/json',
    );
  }
  // Aborted uploads and Content-Length mismatches: the body is not a JSON document we can read.
  return new AppError('invalid_json', 'The request body could not be read completely');
}

/** The text of the request body `jsonBody` read: for the values a route returns exactly as written. */
export function bodyTextOf(res: Response): string {
  return (res.locals.bodyText as string | undefined) ?? '';
}

/**
 * A validated `metadata` member as stored: the text the caller wrote it in (members in their order,
 * read from the body's text), so it is returned as given; null stores `{}`.
 */
export function metadataAsWritten(metadata: Record<string, unknown> | null, res: Response): string {
  return metadata === null ? '{}' : membersAsWritten(bodyTextOf(res)).get('metadata')!;
}

/** A JSON body read: the parsed (not yet validated) value and its text. */
export interface JsonBody {
  readonly value: unknown;
  readonly text: string;
}

/**
 * Reads a JSON request body (framework-free: the Express middleware below and verify's own route use
 * it); refusals are thrown as AppError: 415 for another media type or a compressed body, 413 beyond
 * 64 KiB, 400 invalid_json for what is not JSON in UTF-8.
 */
export async function readJsonBody(req: IncomingMessage, res: ServerResponse): Promise<JsonBody> {
  if (!isJsonContentType(req.headers['content-type'])) throw new AppError('unsupported_media_type');
  const raw = await readRawBody(req, res);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new AppError('invalid_json', 'The request body is not UTF-8');
  }
  try {
    return { value: JSON.parse(text) as unknown, text };
  } catch {
    throw new AppError(
      'invalid_json',
      text.trim() === '' ? 'The request body is empty; send a JSON object' : undefined,
    );
  }
}

/**
 * The request body's bytes as sent, whatever its media type (a signed body is checked on exactly
 * these); refusals thrown as AppError: 413 beyond 64 KiB, 415 compressed, 400 cut short.
 */
export async function readRawBody(req: IncomingMessage, res: ServerResponse): Promise<Buffer> {
  const raw = await new Promise<unknown>((resolve, reject) =>
    readRaw(req as Request, res as Response, (err?: unknown) =>
      err ? reject(bodyReadError(err)) : resolve((req as { body?: unknown }).body),
    ),
  );
  return Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
}

/** Leaves the parsed (not yet validated) JSON value in `req.body`, and its text for `bodyTextOf`. */
export const jsonBody: RequestHandler = (req, res, next) => {
  readJsonBody(req, res).then(({ value, text }) => {
    req.body = value;
    res.locals.bodyText = text;
    next();
  }, next);
};
