/**
 * Where Tollgate may fetch the portal's API reference from (docs/decisions/0151-portal-reference-reach.md):
 * https only, and public addresses only, checked when the URL is saved and again on every connection,
 * so a name that resolves elsewhere later (DNS rebinding) or a redirect reaches no more than the URL did.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { promisify } from 'node:util';
import { Agent } from 'undici';
import { hostAddress, isPublicAddress } from '../../../net/public-address.js';

/** PORTAL_REFERENCE_ALLOW_HTTP and PORTAL_REFERENCE_ALLOW_PRIVATE. */
export interface ReferenceReach {
  readonly allowHttp: boolean;
  readonly allowPrivate: boolean;
}

const resolveAll = promisify(dnsLookup) as (
  hostname: string,
  options: LookupAllOptions,
) => Promise<LookupAddress[]>;

const NOT_PUBLIC =
  'resolves to an address that is not public (loopback, private, link-local, unique-local, multicast or unspecified); PORTAL_REFERENCE_ALLOW_PRIVATE=true allows it';

/** Why `url` may not be fetched as it is written (its scheme, or a host that is an address), or undefined. */
export function urlProblem(url: URL, reach: ReferenceReach): string | undefined {
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && reach.allowHttp))
    return 'must be an https URL (http needs PORTAL_REFERENCE_ALLOW_HTTP=true)';
  const address = hostAddress(url);
  if (!reach.allowPrivate && address !== undefined && !isPublicAddress(address)) return NOT_PUBLIC;
  return undefined;
}

/**
 * Why `text` may not be saved as `apiReference.url`, or undefined: `urlProblem`, or a host name that
 * resolves now to an address that is not public. A name that does not resolve yet is taken (its
 * fetch then fails, and says so).
 */
export async function savedUrlProblem(text: string, reach: ReferenceReach): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL';
  }
  const problem = urlProblem(url, reach);
  if (problem !== undefined || reach.allowPrivate || hostAddress(url) !== undefined) return problem;
  const addresses = await resolveAll(url.hostname, { all: true }).catch(() => []);
  return addresses.every((a) => isPublicAddress(a.address)) ? undefined : NOT_PUBLIC;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A socket's `lookup` that fails for a name with any address that is not public. */
function publicOnlyLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  resolveAll(hostname, { ...options, all: true }).then(
    (addresses) => {
      if (addresses.length === 0 || !addresses.every((a) => isPublicAddress(a.address)))
        return callback(Object.assign(new Error(`${hostname} is not public`), { code: 'ENOTFOUND' }), '');
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    },
    (err: NodeJS.ErrnoException) => callback(err, ''),
  );
}

/** The connections a reference fetch makes: every name checked as it is resolved for the socket. */
export const referenceDispatcher = (reach: ReferenceReach): Agent =>
  new Agent(reach.allowPrivate ? {} : { connect: { lookup: publicOnlyLookup } });
