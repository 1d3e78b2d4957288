import type { ExportSubject, ExportType } from './billing-export.js';

/** One revision of one closed bucket of one subject, as the receiver is told it. */
export interface UsageSend {
  readonly idempotencyId: string;
  readonly subject: ExportSubject;
  readonly subjectId: string;
  /** Who the receiver bills: the subject's externalId, or its metadata member named by customerField. */
  readonly customer: string;
  readonly bucketStartMs: number;
  readonly bucketEndMs: number;
  /** 1 for the bucket's first send, then one more for each correction. */
  readonly revision: number;
  /** The units this revision adds: the bucket's stored usage less what earlier revisions sent. */
  readonly units: number;
}

/** Where and how an export sends. */
export interface ExportTarget {
  readonly exportId: string;
  readonly type: ExportType;
  readonly url: string;
  /** stripe-v2: where the meter event stream is served (the export's streamUrl, or its url). */
  readonly streamUrl: string;
  readonly eventName: string;
  /** Decrypted for the run only; never logged, stored in plain text or answered. */
  readonly credential: string | undefined;
}

/** One HTTP request to the receiver. */
export interface ReceiverRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What a receiver's refusal of a batch says of one of its events. */
export type EventVerdict =
  | { readonly kind: 'held' }
  | { readonly kind: 'refused'; readonly error: string }
  /** Not taken because another event of the batch was refused: sent again without it. */
  | { readonly kind: 'untaken' };

/** A service's request format: how sends become one request, as the service documents it. */
export interface ExportFormat {
  /** Events one request carries at most: 1 where the service takes one event a request. */
  readonly batchSize: number;
  /** The request carrying `sends` (1 to batchSize); `token`: the session's, for a service that uses one. */
  request(target: ExportTarget, sends: readonly UsageSend[], token?: string): ReceiverRequest;
  /**
   * Whether a refusal other than a one-event 409 (which every receiver's answer counts as held,
   * send-outcome.ts) says the receiver already holds this id (a retry whose first answer was lost).
   */
  alreadyHeld?(status: number, body: string): boolean;
  /** A refusal of a batch that names its events (Lago's 422): one verdict per event; undefined: it names none. */
  verdicts?(status: number, body: string, count: number): EventVerdict[] | undefined;
}

/** The one send of a request to a service that takes one event a request. */
export function single(sends: readonly UsageSend[]): UsageSend {
  if (sends.length !== 1) throw new Error(`one event a request, not ${sends.length}`);
  return sends[0]!;
}

/** `base` with the service's documented path appended (a trailing slash of the base is dropped). */
export const servicePath = (base: string, path: string): string => base.replace(/\/+$/, '') + path;

export const bearer = (credential: string | undefined): Record<string, string> =>
  credential === undefined ? {} : { authorization: `Bearer ${credential}` };
