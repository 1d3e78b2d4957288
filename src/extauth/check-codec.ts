/**
 * `envoy.service.auth.v3.Authorization/Check`'s messages on the wire, without a schema at run time:
 * the CheckRequest's few fields envoy-check.ts reads (the rest skipped unread) and the CheckResponse
 * it answers. Field numbers from protos/envoy-api/envoy/service/auth/v3/external_auth.proto and
 * attribute_context.proto; values as proto-loader's `toObject` gives them (tests/helpers/envoy-protos.ts's
 * LOADER_OPTIONS: set on the wire, present; else absent), except that a string of a message read is
 * "" when absent, as proto3 reads it (Envoy's encoder leaves an empty string off the wire); bytes as
 * protobufjs' own encoder writes them (tests/unit/envoy-codecs.test.ts compares both).
 */
import type { CheckRequest, CheckResponse } from './envoy-check.js';
import { endOf, Reader, Writer, writeHeaderValue, type ProtoReader, type ProtoWriter } from './proto-wire.js';
import { setOwnField } from '../net/own-field.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Attributes = NonNullable<CheckRequest['attributes']>;
type Http = NonNullable<NonNullable<Attributes['request']>['http']>;

export function decodeCheckRequest(message: Uint8Array): CheckRequest {
  const reader = Reader.create(message);
  const request: Mutable<CheckRequest> = {};
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) request.attributes = attributes(reader, endOf(reader));
    else reader.skipType(tag & 7);
  }
  return request;
}

/** AttributeContext: source (1), request (4), of which http (2). */
function attributes(reader: ProtoReader, end: number): Attributes {
  const context: Mutable<Attributes> = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) context.source = single(reader, endOf(reader), 1, 'address', socketAddressOf);
    else if (tag >>> 3 === 4) context.request = single(reader, endOf(reader), 2, 'http', http);
    else reader.skipType(tag & 7);
  }
  return context;
}

/** A message of which one field, a message read by `read`, is kept as `name`. */
function single<K extends string, V>(
  reader: ProtoReader,
  end: number,
  field: number,
  name: K,
  read: (reader: ProtoReader, end: number) => V,
): { [P in K]?: V } {
  const message: { [P in K]?: V } = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === field) message[name] = read(reader, endOf(reader));
    else reader.skipType(tag & 7);
  }
  return message;
}

/** Peer's address (1), an Address (config/core/v3/address.proto): socket_address (1), of which address (2). */
const socketAddressOf = (reader: ProtoReader, end: number) =>
  single(reader, end, 1, 'socket_address', (r, e) => {
    const socket = { address: '' };
    while (r.pos < e) {
      const tag = r.uint32();
      if (tag >>> 3 === 2) socket.address = r.string();
      else r.skipType(tag & 7);
    }
    return socket;
  });

/** HttpRequest: method (2), headers (3, a map), path (4), host (5), body (11), raw_body (12). */
function http(reader: ProtoReader, end: number): Http {
  const request: Mutable<Http> = { method: '', path: '', host: '', body: '' };
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag >>> 3) {
      case 2:
        request.method = reader.string();
        break;
      case 3: {
        const headers = (request.headers ??= {}) as Record<string, string>;
        const entryEnd = endOf(reader);
        let key = '';
        let value = '';
        while (reader.pos < entryEnd) {
          const entryTag = reader.uint32();
          if (entryTag >>> 3 === 1) key = reader.string();
          else if (entryTag >>> 3 === 2) value = reader.string();
          else reader.skipType(entryTag & 7);
        }
        setOwnField(headers, key, value);
        break;
      }
      case 4:
        request.path = reader.string();
        break;
      case 5:
        request.host = reader.string();
        break;
      case 11:
        request.body = reader.string();
        break;
      case 12:
        request.raw_body = reader.bytes();
        break;
      default:
        reader.skipType(tag & 7);
    }
  }
  return request;
}

/** HeaderAppendAction (config/core/v3/base.proto). */
const OVERWRITE_IF_EXISTS_OR_ADD = 2;

type HeaderOptions = NonNullable<CheckResponse['ok_response']>['headers'];

/** HeaderValueOption: header (1), append_action (3); each as field `field`. */
function writeOptions(writer: ProtoWriter, field: number, options: HeaderOptions): void {
  for (const { header } of options) {
    writer.uint32((field << 3) | 2).fork();
    writeHeaderValue(writer, 1, header.key, header.value);
    writer.uint32(24).int32(OVERWRITE_IF_EXISTS_OR_ADD).ldelim();
  }
}

/** CheckResponse: status (1: code 1, message 2), denied_response (2), ok_response (3). */
export function encodeCheckResponse(response: CheckResponse): Uint8Array {
  const writer = Writer.create();
  const { status, ok_response: ok, denied_response: denied } = response;
  writer.uint32(10).fork().uint32(8).int32(status.code);
  if (status.message !== undefined) writer.uint32(18).string(status.message);
  writer.ldelim();
  if (denied !== undefined) {
    // DeniedHttpResponse: status (1: HttpStatus code 1), headers (2), body (3).
    writer.uint32(18).fork().uint32(10).fork().uint32(8).int32(denied.status.code).ldelim();
    writeOptions(writer, 2, denied.headers);
    writer.uint32(26).string(denied.body).ldelim();
  }
  if (ok !== undefined) {
    // OkHttpResponse: headers (2), headers_to_remove (5), response_headers_to_add (6).
    writer.uint32(26).fork();
    writeOptions(writer, 2, ok.headers);
    for (const name of ok.headers_to_remove) writer.uint32(42).string(name);
    writeOptions(writer, 6, ok.response_headers_to_add);
    writer.ldelim();
  }
  return writer.finish();
}
