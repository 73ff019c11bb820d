/**
 * A model_config's widths scaled, and the starting templates as they fit a parameter limit:
 * narrowed (every width to 2/3) until they do, or as narrow as FIT_STEPS make them. Templates are
 * sized for no limit; without this, a goal of "150k params" on a corpus whose templates have
 * 260k-460k had no candidate at all, and the run waited for one. The planner fits the templates
 * it proposes (agents/planner/proposals.ts), and a launch refuses a limit below every fitted
 * template before it starts (smallestTemplate), each by the same rule.
 */
import { SEARCH_DEFAULTS, type SearchDevice } from "../defaults.js";
import { compileModel } from "../compiler/compile.js";
import { compileOptions } from "../compiler/options.js";
import type { LayerInput, ModelConfigInput } from "../model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { templatesFor } from "./index.js";
import type { Template } from "./task.js";

const round8 = (x: number) => Math.max(8, Math.round(x / 8) * 8);

/** `fn` applied to every layer, a residual block's own layers included. */
export function mapLayers(layers: LayerInput[], fn: (l: LayerInput) => LayerInput): LayerInput[] {
  return layers.map((l) => {
    const out = fn(l);
    return out.type === "residual" ? { ...out, layers: mapLayers(out.layers, fn) } : out;
  });
}

function scaleLayer(l: LayerInput, f: number): LayerInput {
  switch (l.type) {
    case "conv2d":
    case "pointwise_conv2d":
    case "ghost":
    case "mbconv":
    case "conv1d":
      return { ...l, out_channels: round8(l.out_channels * f) };
    case "linear":
      return { ...l, out_features: round8(l.out_features * f) };
    case "patch_embed":
    case "embedding":
      return { ...l, dim: round8((l.dim ?? 64) * f) };
    case "ngram_embedding":
      return { ...l, dim: round8((l.dim ?? 32) * f) };
    case "gru":
      return { ...l, hidden: round8((l.hidden ?? 128) * f) };
    default:
      return l;
  }
}

/** Every width scaled by `f` but an explicit classifier's (a final linear layer). */
export function scaleWidths(model: ModelConfigInput, f: number): ModelConfigInput {
  const out = structuredClone(model);
  const last = out.layers.length - 1;
  out.layers = out.layers.map((l, i) => (i === last && l.type === "linear" ? l : mapLayers([l], (x) => scaleLayer(x, f))[0]!));
  return out;
}

/** How many times a template may be narrowed to fit a parameter limit (each 2/3 the width). */
const FIT_STEPS = 6;

/** `model` narrowed to fit `max` parameters (none: as it is), as `count` counts them. */
export function narrowedToFit(model: ModelConfigInput, max: number, count: (m: ModelConfigInput) => number | string): ModelConfigInput {
  for (let i = 0; i < FIT_STEPS && max > 0; i++) {
    const p = count(model);
    if (typeof p === "string" || p <= max) break;
    model = scaleWidths(model, 2 / 3);
  }
  return model;
}

/** A model_config's parameter count, the compiler's for the dataset, or why it does not compile. */
export function configParamsCounter(info: DatasetInfo): (model: ModelConfigInput) => number | string {
  const options = compileOptions(info);
  return (model) => {
    const r = compileModel(model, options);
    return r.ok ? r.params : r.error;
  };
}

/**
 * A model_config's parameters less its lookup tables' (the compiler's count for the dataset): what
 * its forward pass multiplies by, and its time scales with; undefined when it does not compile.
 */
export function configWorkCounter(info: DatasetInfo): (model: ModelConfigInput) => number | undefined {
  const options = compileOptions(info);
  return (model) => {
    const r = compileModel(model, options);
    return r.ok ? r.params - r.lookupParams : undefined;
  };
}

/** The templates a run may start from: the data's, narrowed to the families of the run's space (launch --space). */
export function searchTemplates(info: DatasetInfo, device: SearchDevice, families: readonly string[]): Template[] {
  const all = templatesFor(info, device);
  return families.length ? all.filter((t) => families.includes(t.name)) : all;
}

/**
 * The fewest parameters a starting template reaches for a parameter limit of `max`: a limit below
 * it leaves the built-in brain nothing to start from, which a launch says before it starts.
 */
export function smallestTemplate(info: DatasetInfo, device: SearchDevice, max: number, families: readonly string[] = []): { name: string; params: number } | undefined {
  const count = configParamsCounter(info);
  const sizes = searchTemplates(info, device, families).flatMap((t) => {
    const p = count(narrowedToFit(t.build(info, SEARCH_DEFAULTS[device].templateWidth), max, count));
    return typeof p === "number" ? [{ name: t.name, params: p }] : [];
  });
  return sizes.sort((a, b) => a.params - b.params)[0];
}
