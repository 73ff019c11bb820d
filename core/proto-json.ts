/**
 * Protobuf messages as the JSON people and tools read (results.json,
 * summary.json, `--json`): proto field names, every field present, and
 * 64-bit integers as JSON numbers. The proto3 JSON mapping writes every
 * int64/uint64 as a string ("params": "20538") because a double holds
 * integers exactly only up to 2^53; parameter, FLOP and byte counts are far
 * below it, and a value that is not keeps its string rather than lose digits.
 */
import { ScalarType, toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";

const WIDE = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

const asNumber = (v: JsonValue): JsonValue => (typeof v === "string" && Number.isSafeInteger(Number(v)) ? Number(v) : v);

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** `json` is `desc`'s toJson with proto field names; rewritten in place. */
function numbers(desc: DescMessage, json: JsonObject): JsonObject {
  for (const f of desc.fields) {
    const v = json[f.name];
    if (v === undefined || v === null) continue;
    if (f.fieldKind === "scalar" && WIDE.has(f.scalar)) json[f.name] = asNumber(v);
    else if (f.fieldKind === "message" && isObject(v)) numbers(f.message, v);
    else if (f.fieldKind === "list" && Array.isArray(v)) {
      if (f.listKind === "scalar" && WIDE.has(f.scalar)) json[f.name] = v.map(asNumber);
      else if (f.listKind === "message") for (const m of v) if (isObject(m)) numbers(f.message, m);
    } else if (f.fieldKind === "map" && isObject(v)) {
      for (const [k, m] of Object.entries(v)) {
        if (f.mapKind === "scalar" && WIDE.has(f.scalar)) v[k] = asNumber(m);
        else if (f.mapKind === "message" && isObject(m)) numbers(f.message, m);
      }
    }
  }
  return json;
}

export function protoJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonObject {
  return numbers(schema, toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true }) as JsonObject);
}
