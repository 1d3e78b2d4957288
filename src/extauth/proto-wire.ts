/**
 * Protocol Buffers' wire format for Envoy's messages (check-codec.ts, rate-limit-codec.ts): protobufjs'
 * reader and writer, the very primitives its generated codecs use, without loading a schema.
 */
import protobuf from 'protobufjs/minimal.js';

export const { Reader, Writer } = protobuf;
export type ProtoReader = protobuf.Reader;
export type ProtoWriter = protobuf.Writer;

/** A length-delimited field's end: the reader stands at its length. */
export const endOf = (reader: ProtoReader): number => reader.uint32() + reader.pos;

/** config.core.v3.HeaderValue (key 1, value 2) as field `field`. */
export function writeHeaderValue(writer: ProtoWriter, field: number, key: string, value: string): void {
  writer
    .uint32((field << 3) | 2)
    .fork()
    .uint32(10)
    .string(key)
    .uint32(18)
    .string(value)
    .ldelim();
}
