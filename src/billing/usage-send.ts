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

/** A service's request format: how one send becomes one request, as the service documents it. */
export interface ExportFormat {
  request(target: ExportTarget, send: UsageSend): ReceiverRequest;
  /**
   * Whether a refusal other than 409 (which every receiver's answer counts as held, send-outcome.ts) says
   * the receiver already holds this id (a retry whose first answer was lost).
   */
  alreadyHeld?(status: number, body: string): boolean;
}

/** `base` with the service's documented path appended (a trailing slash of the base is dropped). */
export const servicePath = (base: string, path: string): string => base.replace(/\/+$/, '') + path;

export const bearer = (credential: string | undefined): Record<string, string> =>
  credential === undefined ? {} : { authorization: `Bearer ${credential}` };
