/**
 * A trial's configs on the wire: the model (proto ModelSpec), the training config (TrainSpec)
 * and the brief (Brief), converted field for field to and from the objects the zod schemas of
 * core/model-config.ts and core/brief.ts validate. Configs are validated where they are authored
 * (a policy, an LLM's answer, a person's file or form) and travel typed from there; the only text
 * read here is what events stored before the types carried (`*_json`), in one place.
 *
 * The walk is driven by the messages' descriptors, so a field added to both sides needs no code
 * here; the message and the zod object share their field names (snake_case). Three messages are
 * unions the zod side writes differently: a layer (`type` names the case), a convolution's
 * padding ("same" or pixels) and a constructor argument (a number or a boolean).
 */
import { create, fromJson, toJson, type DescEnum, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ModelSpecSchema, LayerSpecSchema, PaddingSchema, TrainSpecSchema, type ModelSpec, type TrainSpec } from "../proto/gen/research/v1/model_pb.js";
import { KwargValueSchema, type ModelSource } from "../proto/gen/research/v1/runner_pb.js";
import { parseJson } from "./json.js";
import { BriefSchema as BriefMessageSchema, type Brief as BriefMessage } from "../proto/gen/research/v1/events_pb.js";
import { isCodeModel, type TrainConfig, type TrainConfigInput, type TrialModelInput } from "./model-config.js";
import { authoredFromWire } from "./space.js";
import { recipeOf } from "./recipe.js";
import type { Brief } from "./brief.js";

interface Union {
  /** The case a value takes and what the case's field holds. */
  encode(value: unknown): [kase: string, value: unknown];
  decode(kase: string, value: unknown): unknown;
}

const UNIONS = new Map<string, Union>([
  [
    LayerSpecSchema.typeName,
    {
      encode: (v) => {
        const { type, ...rest } = v as { type: string };
        return [type, rest];
      },
      decode: (kase, v) => ({ type: kase, ...(v as object) }),
    },
  ],
  [PaddingSchema.typeName, { encode: (v) => (v === "same" ? ["same", true] : ["pixels", v]), decode: (kase, v) => (kase === "same" ? "same" : v) }],
  [KwargValueSchema.typeName, { encode: (v) => [typeof v === "boolean" ? "flag" : "number", v], decode: (_, v) => v }],
]);

function fieldNamed(desc: DescMessage, name: string): DescField {
  const f = desc.fields.find((x) => x.name === name);
  // The value passed its zod schema, so a field the message lacks is the two drifting apart (test/core/config-wire.test.ts).
  if (!f) throw new Error(`${desc.typeName} has no field ${name}`);
  return f;
}

const enumNumber = (e: DescEnum, name: unknown) => {
  const v = e.values.find((x) => x.number !== 0 && x.localName.toLowerCase() === name);
  if (!v) throw new Error(`${e.typeName} has no value ${String(name)}`);
  return v.number;
};
const enumName = (e: DescEnum, n: JsonValue) => e.values.find((x) => x.number === n)?.localName.toLowerCase();

/** `one` applied to a field's value: to each element of a list or each value of a map. */
function eachValue<U>(f: DescField, v: unknown, one: (x: unknown) => U): U | U[] | Record<string, U> {
  if (f.fieldKind === "list") return (v as unknown[]).map(one);
  if (f.fieldKind === "map") return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, one(x)]));
  return one(v);
}

/** A field's value in proto JSON. */
function encodeField(f: DescField, v: unknown): JsonValue {
  return eachValue(f, v, (x): JsonValue => (f.message ? encodeMessage(f.message, x) : f.enum ? enumNumber(f.enum, x) : (x as JsonValue)));
}

function encodeMessage(desc: DescMessage, v: unknown): JsonObject {
  const union = UNIONS.get(desc.typeName);
  if (union) {
    const [kase, value] = union.encode(v);
    return { [kase]: encodeField(fieldNamed(desc, kase), value) };
  }
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v as object)) if (x !== undefined) out[k] = encodeField(fieldNamed(desc, k), x);
  return out;
}

function decodeField(f: DescField, v: JsonValue): unknown {
  return eachValue(f, v, (x) => (f.message ? decodeMessage(f.message, x as JsonObject) : f.enum ? enumName(f.enum, x as JsonValue) : x));
}

function decodeMessage(desc: DescMessage, v: JsonObject): unknown {
  const union = UNIONS.get(desc.typeName);
  if (union) {
    const [kase, value] = Object.entries(v)[0]!;
    return union.decode(kase, decodeField(fieldNamed(desc, kase), value));
  }
  const out = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decodeField(fieldNamed(desc, k), x)]));
  // A proto map has no "absent" apart from empty: it reads back as an object, as the schema's default fills it.
  for (const f of desc.fields) if (f.fieldKind === "map") out[f.name] ??= {};
  return out;
}

/** A validated model (authored, or with its defaults filled) as it travels. */
export function modelSpec(m: TrialModelInput): ModelSpec {
  const json: JsonObject = isCodeModel(m) ? { python_class: encodeMessage(ModelSpecSchema.field.pythonClass.message!, m) } : { network: encodeMessage(ModelSpecSchema.field.network.message!, m) };
  return fromJson(ModelSpecSchema, json);
}

/** A model as its author wrote it, from the wire; undefined when none was sent. */
export function modelOfSpec(m: ModelSpec | undefined): TrialModelInput | undefined {
  if (!m?.kind.case) return undefined;
  const json = toJson(ModelSpecSchema, m, { useProtoFieldName: true, enumAsInteger: true }) as JsonObject;
  const [kase, value] = Object.entries(json)[0]!;
  return decodeMessage(fieldNamed(ModelSpecSchema, kase).message!, value as JsonObject) as TrialModelInput;
}

/** A validated train config (authored, or with its defaults filled) as it travels. */
export function trainSpec(t: TrainConfigInput): TrainSpec {
  return create(TrainSpecSchema, { recipe: recipeOf(t as TrainConfig), subset: t.subset ?? 0 });
}

/** A train config as its author wrote it, from the wire: the fields it left unset are absent. */
export function trainOfSpec(t: TrainSpec | undefined): TrainConfigInput {
  return { ...authoredFromWire(t?.recipe as unknown as Record<string, unknown> | undefined), ...(t?.subset ? { subset: t.subset } : {}) } as TrainConfigInput;
}

/** An old event's JSON text as its value (none: undefined); text that is not JSON stays text, for the schema to refuse in its words. */
const legacy = (text: string): unknown => (text ? (parseJson(text) ?? text) : undefined);

/**
 * What a message carries as its model, for the zod schema to check: the typed model, or what an
 * event stored before configs were typed carried as JSON text (the one reader of that text).
 */
export function modelSent(x: { model?: ModelSpec; modelConfigJson: string }): unknown {
  return modelOfSpec(x.model) ?? legacy(x.modelConfigJson);
}

/** What a message carries as its train config: typed, or an old event's JSON text; nothing sent is `{}` (every default). */
export function trainSent(x: { train?: TrainSpec; trainConfigJson: string }): unknown {
  return x.train ? trainOfSpec(x.train) : (legacy(x.trainConfigJson) ?? {});
}

/** What a BriefReady carries: the typed brief, or an old event's JSON text. */
export function briefSent(b: { brief?: BriefMessage; briefJson: string }): unknown {
  return b.brief ? briefOfMessage(b.brief) : legacy(b.briefJson);
}

/** A code model's constructor arguments as a request carries them (requests stored before: JSON text). */
export function kwargsSent(m: ModelSource): unknown {
  if (!Object.keys(m.initKwargs).length && m.initKwargsJson) return legacy(m.initKwargsJson);
  return Object.fromEntries(Object.entries(m.initKwargs).map(([k, v]) => [k, v.value.value]));
}

/** Constructor arguments as a request carries them. */
export function kwargsMessage(kwargs: Record<string, number | boolean>): ModelSource["initKwargs"] {
  return Object.fromEntries(Object.entries(kwargs).map(([k, v]) => [k, create(KwargValueSchema, { value: typeof v === "boolean" ? { case: "flag", value: v } : { case: "number", value: v } })]));
}

export function briefMessage(b: Brief): BriefMessage {
  return fromJson(BriefMessageSchema, b as unknown as JsonObject);
}

export function briefOfMessage(b: BriefMessage): Brief {
  return toJson(BriefMessageSchema, b, { useProtoFieldName: true, alwaysEmitImplicit: true }) as unknown as Brief;
}
