// The wire rule every record is held to before it is decoded, as Go's stream/wire.go:
// each field this build knows has the wire type its schema gives, at every depth; no
// groups; every varint, length and field number whole and in range, as protobuf-go
// requires. protobuf-es reads a known field of another wire type as its declared type (and
// overruns a nested message's end), where protobuf-go keeps it as an unknown field: the
// two readers of one file would read different matches, so both reject such a record, and
// a tag longer than protobuf writes, which protobuf-es refuses and protobuf-go reads.

import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";

const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;
const MAX_FIELD = 2 ** 29 - 1; // protowire.MaxValidNumber
const MAX_TAG_LEN = 5; // the longest tag protobuf writes; protobuf-es refuses a longer one (Go's maxTagLen)

interface WireField {
  type: number;
  packed: boolean; // a repeated scalar: it may also come as one length-delimited run
  msg: WireRules | undefined; // a message-typed field's own rules
}

type WireRules = Map<number, WireField>;

const rulesCache = new Map<string, WireRules>();

function rulesOf(desc: DescMessage): WireRules {
  const cached = rulesCache.get(desc.typeName);
  if (cached) return cached;
  const rules: WireRules = new Map();
  rulesCache.set(desc.typeName, rules); // before the fields: a message may contain itself
  for (const f of desc.fields) rules.set(f.number, fieldRule(f));
  return rules;
}

function fieldRule(f: DescField): WireField {
  switch (f.fieldKind) {
    case "scalar":
      return { type: scalarWireType(f.scalar), packed: false, msg: undefined };
    case "enum":
      return { type: VARINT, packed: false, msg: undefined };
    case "message":
      return { type: BYTES, packed: false, msg: rulesOf(f.message) };
    case "map":
      return { type: BYTES, packed: false, msg: undefined }; // entries are not checked inside (this format has no maps)
    case "list":
      switch (f.listKind) {
        case "scalar": {
          const type = scalarWireType(f.scalar);
          return { type, packed: type !== BYTES, msg: undefined };
        }
        case "enum":
          return { type: VARINT, packed: true, msg: undefined };
        case "message":
          return { type: BYTES, packed: false, msg: rulesOf(f.message) };
      }
  }
}

function scalarWireType(t: ScalarType): number {
  switch (t) {
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.FLOAT:
      return FIXED32;
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.DOUBLE:
      return FIXED64;
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return BYTES;
    default:
      return VARINT;
  }
}

/** Why b, the encoding of a message of type desc, breaks the wire rule; undefined if it does not. */
export function wireProblem(desc: DescMessage, b: Uint8Array): string | undefined {
  return check(rulesOf(desc), b, 0, b.length);
}

function check(rules: WireRules, b: Uint8Array, from: number, to: number): string | undefined {
  let pos = from;
  while (pos < to) {
    const tag = varint(b, pos, to);
    if (typeof tag === "string") return `field tag: ${tag}`;
    const num = Math.floor(tag.value / 8);
    if (tag.next - pos > MAX_TAG_LEN) return `field ${num}'s tag is ${tag.next - pos} bytes long: protobuf writes at most ${MAX_TAG_LEN}`;
    pos = tag.next;
    const type = tag.value % 8;
    if (num < 1 || num > MAX_FIELD) return `field number ${num} is out of protobuf's range 1..${MAX_FIELD}`;
    if (type === START_GROUP || type === END_GROUP) return `field ${num} is a group (wire type ${type}): this format has none`;
    const v = value(b, pos, to, type);
    if (typeof v === "string") return `field ${num}: ${v}`;
    const f = rules.get(num);
    if (f) {
      if (type === f.type) {
        if (f.msg) {
          const bad = check(f.msg, b, v.from, v.next);
          if (bad) return `in field ${num}: ${bad}`;
        }
      } else if (f.packed && type === BYTES) {
        for (let p = v.from; p < v.next; ) {
          const e = value(b, p, v.next, f.type);
          if (typeof e === "string") return `field ${num} (packed): ${e}`;
          p = e.next;
        }
      } else {
        return `field ${num} has wire type ${type}, its schema's is ${f.type}`;
      }
    }
    pos = v.next;
  }
  return undefined;
}

// value skips the value of wire type type at pos: where its bytes start (after a length)
// and where the next field starts, or what is wrong (protowire.ConsumeFieldValue).
function value(b: Uint8Array, pos: number, to: number, type: number): { from: number; next: number } | string {
  switch (type) {
    case VARINT: {
      const v = varint(b, pos, to);
      return typeof v === "string" ? v : { from: pos, next: v.next };
    }
    case FIXED32:
      return pos + 4 <= to ? { from: pos, next: pos + 4 } : "cut short";
    case FIXED64:
      return pos + 8 <= to ? { from: pos, next: pos + 8 } : "cut short";
    case BYTES: {
      const n = varint(b, pos, to);
      if (typeof n === "string") return n;
      if (n.value > to - n.next) return "cut short";
      return { from: n.next, next: n.next + n.value };
    }
    default:
      return `reserved wire type ${type}`;
  }
}

// varint reads a varint at pos, before to, as protowire.ConsumeVarint: at most 10 bytes,
// the 10th at most 1. Not stream.ts's readVarint, which refuses values past 2^53: a uint64
// field (a seed) may hold one. They lose precision here, which only matters for lengths
// and tags, and those are then out of range anyway.
function varint(b: Uint8Array, pos: number, to: number): { value: number; next: number } | string {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos + i >= to) return "cut short";
    const c = b[pos + i]!;
    if (i === 9 && c > 1) return "varint overflows 64 bits";
    value += (c & 0x7f) * scale;
    scale *= 128;
    if (c < 0x80) return { value, next: pos + i + 1 };
  }
  return "varint overflows 64 bits";
}
