/**
 * `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`'s messages on the wire, without a
 * schema at run time: the RateLimitRequest's fields envoy-rate-limit.ts reads and the
 * RateLimitResponse it answers. Field numbers from protos/envoy-api/envoy/service/ratelimit/v3/rls.proto
 * and envoy/extensions/common/ratelimit/v3/ratelimit.proto; values and bytes as in check-codec.ts.
 */
import type { RateLimitRequest, RateLimitResponse } from './envoy-rate-limit.js';
import { endOf, Reader, Writer, writeHeaderValue, type ProtoReader } from './proto-wire.js';

interface Entry {
  key: string;
  value: string;
}

/** RateLimitRequest: domain (1), descriptors (2), hits_addend (3). */
export function decodeRateLimitRequest(message: Uint8Array): RateLimitRequest {
  const reader = Reader.create(message);
  const request: { domain: string; descriptors?: { entries?: Entry[] }[]; hits_addend?: number } = {
    domain: '',
  };
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    switch (tag >>> 3) {
      case 1:
        request.domain = reader.string();
        break;
      case 2:
        (request.descriptors ??= []).push(descriptor(reader, endOf(reader)));
        break;
      case 3:
        request.hits_addend = reader.uint32();
        break;
      default:
        reader.skipType(tag & 7);
    }
  }
  return request as RateLimitRequest;
}

/** RateLimitDescriptor: entries (1), each a key (1) and a value (2). */
function descriptor(reader: ProtoReader, end: number): { entries?: Entry[] } {
  const read: { entries?: Entry[] } = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 !== 1) {
      reader.skipType(tag & 7);
      continue;
    }
    // Envoy's encoder leaves an empty value off the wire: proto3 reads it as "".
    const entry: Entry = { key: '', value: '' };
    const entryEnd = endOf(reader);
    while (reader.pos < entryEnd) {
      const entryTag = reader.uint32();
      if (entryTag >>> 3 === 1) entry.key = reader.string();
      else if (entryTag >>> 3 === 2) entry.value = reader.string();
      else reader.skipType(entryTag & 7);
    }
    (read.entries ??= []).push(entry);
  }
  return read;
}

/** RateLimitResponse.Code and RateLimit.Unit, by name. */
const CODES = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 } as const;
const UNITS = { UNKNOWN: 0, SECOND: 1, MINUTE: 2, HOUR: 3, DAY: 4, MONTH: 5, YEAR: 6 } as const;

/**
 * RateLimitResponse: overall_code (1), statuses (2), response_headers_to_add (3), raw_body (5). A
 * DescriptorStatus: code (1), current_limit (2: requests_per_unit 1, unit 2, name 3), limit_remaining
 * (3), duration_until_reset (4: seconds 1, nanos 2).
 */
export function encodeRateLimitResponse(response: RateLimitResponse): Uint8Array {
  const writer = Writer.create();
  writer.uint32(8).int32(CODES[response.overall_code]);
  for (const status of response.statuses) {
    writer.uint32(18).fork().uint32(8).int32(CODES[status.code]);
    const limit = status.current_limit;
    if (limit !== undefined)
      writer
        .uint32(18)
        .fork()
        .uint32(8)
        .uint32(limit.requests_per_unit)
        .uint32(16)
        .int32(UNITS[limit.unit])
        .uint32(26)
        .string(limit.name)
        .ldelim();
    if (status.limit_remaining !== undefined) writer.uint32(24).uint32(status.limit_remaining);
    const reset = status.duration_until_reset;
    if (reset !== undefined)
      writer.uint32(34).fork().uint32(8).int64(reset.seconds).uint32(16).int32(reset.nanos).ldelim();
    writer.ldelim();
  }
  for (const { key, value } of response.response_headers_to_add) writeHeaderValue(writer, 3, key, value);
  if (response.raw_body !== undefined) writer.uint32(42).bytes(response.raw_body);
  return writer.finish();
}
