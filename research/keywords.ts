/**
 * Keyword rules that read building blocks, tags, modalities and a recipe
 * surface out of free text (a user's note, an arXiv title and abstract). One
 * set of rules for every source, so a paper says the same thing about itself
 * whether it came from a folder or from arXiv.
 */
import type { BuildingBlock } from "../core/brief.js";
import type { Modality } from "../core/goal-words.js";
import type { Surface } from "./corpus.js";

/**
 * Blocks the coder lacks but the corpus already names. A text built on one of
 * them (a mixup paper that also mentions weight decay) must not read as
 * buildable; callers that want coder names only can filter with isCoderBlock.
 */
export const MISSING_BLOCKS = ["mixup", "cutmix", "distillation", "lstm", "drop_path", "gradient_boosting"] as const;
export type MissingBlock = (typeof MISSING_BLOCKS)[number];
export type InferredBlock = BuildingBlock | MissingBlock;

const BLOCK_RULES: readonly (readonly [RegExp, readonly InferredBlock[]])[] = [
  [/squeeze[- ](?:(?:and|&)[- ])?excitation|\bse(?:net|[- ](?:blocks?|modules?|layers?))\b/i, ["se"]],
  [/depth[- ]?wise[- ]separable/i, ["depthwise_conv2d", "pointwise_conv2d"]],
  [/\bdepth[- ]?wise\b/i, ["depthwise_conv2d"]],
  // "pointwise" alone is also pointwise mutual information in text papers.
  [/point[- ]?wise conv|\b1\s?[x×]\s?1 conv/i, ["pointwise_conv2d"]],
  [/inverted residual|\bmbconv\b|\bmobilenet-?v2\b/i, ["mbconv"]],
  [/\bghost (?:modules?|bottlenecks?)\b|\bghostnet/i, ["ghost"]],
  [/\bconvolution(?:s|al)?\b|\bcnns?\b|\bconvnets?\b/i, ["conv2d"]],
  [/\bresidual\b|\bskip[- ]connections?\b|\bshortcut connections?\b/i, ["residual"]],
  [/\bbatch[- ]?norm/i, ["batchnorm"]],
  [/\bgroup[- ]?norm/i, ["groupnorm"]],
  [/\blayer[- ]?norm/i, ["layernorm"]],
  [/\brelu\b|\brectified linear/i, ["activation:relu"]],
  [/\bgelu\b|gaussian error linear/i, ["activation:gelu"]],
  [/\bsilu\b|\bswish\b/i, ["activation:silu"]],
  [/\bmish\b/i, ["activation:mish"]],
  [/\bmax[- ]?pool/i, ["maxpool"]],
  [/\b(?:avg|average)[- ]?pool/i, ["avgpool"]],
  [/\bglobal (?:average|avg)[- ]?pool/i, ["global_avgpool"]],
  [/\bdropout\b/i, ["dropout"]],
  [/\bspatial dropout\b|\bchannel dropout\b|\bdropout2d\b/i, ["dropout2d"]],
  [/\bfully[- ]connected\b|\blinear (?:layer|head|classifier)s?\b|\bmlps?\b|\bmulti-?layer perceptron/i, ["linear"]],
  [/\bpatch embedding|\bimage patches\b|\bpatchify|\bvision transformers?\b|\bvit\b/i, ["patch_embed", "transformer_encoder"]],
  [/\btransformers?\b|\bself-attention\b|\bmulti-head attention\b/i, ["transformer_encoder"]],
  [/\bmlp-mixer\b|\btoken[- ]mixing\b/i, ["mixer_block"]],
  [/\b(?:class|cls) token\b/i, ["token_pool"]],
  [/\bword embeddings?\b|\b(?:token|entity|categorical) embeddings?\b|\bembedding (?:layers?|tables?)\b|\bbag of embeddings\b/i, ["embedding"]],
  [/\b(?:mean|max|attention)[- ]pooling over (?:time|tokens|words)|\bmax-over-time\b|\bsequence pooling\b/i, ["sequence_pool"]],
  [/\bsgd\b|\bstochastic gradient descent\b|\bnesterov\b/i, ["sgd"]],
  [/\badam\b/i, ["adam"]],
  [/\badamw\b|\bdecoupled weight decay\b/i, ["adamw"]],
  [/\bcosine (?:annealing|schedule|decay|learning[- ]rate)/i, ["cosine_schedule"]],
  [/\bstep (?:decay|schedule)\b|\bmulti-?step\b/i, ["step_schedule"]],
  [/\bone-?cycle\b|\bsuper-?convergence\b/i, ["onecycle_schedule"]],
  [/\bwarm-?up\b/i, ["warmup"]],
  [/\bweight decay\b|\bl2 (?:penalty|regulari[sz]ation)\b/i, ["weight_decay"]],
  [/\blabel smoothing\b/i, ["label_smoothing"]],
  [/\bgradient (?:norm )?clipping\b|\bclip(?:ping)? (?:the )?gradients?\b/i, ["grad_clip"]],
  [/\bhorizontal(?:ly)? flip|\bhflip\b|\brandom flip/i, ["hflip"]],
  [/\brandom(?:ly)? crop|\bpad(?:ding)?[- ]and[- ]crop/i, ["random_crop"]],
  [/\bcutout\b|\brandom erasing\b/i, ["cutout"]],
  [/\bmixup\b/i, ["mixup"]],
  [/\bcutmix\b/i, ["cutmix"]],
  [/\bknowledge distillation\b|\bdistill(?:ed|ing|ation)?\b/i, ["distillation"]],
  [/\blstms?\b|\blong short-term memory\b/i, ["lstm"]],
  [/\bgrus?\b|\bgated recurrent units?\b/i, ["gru"]],
  [/\b1-?d convolutions?\b|\bconv1d\b|\btemporal convolutions?\b/i, ["conv1d"]],
  [/\bstochastic depth\b|\bdrop[- ]?path\b/i, ["drop_path"]],
  [/\bgradient[- ]boost|\bxgboost\b|\blightgbm\b|\bcatboost\b/i, ["gradient_boosting"]],
];

const TAG_RULES: readonly (readonly [RegExp, string])[] = [
  [/channel[- ]wise|channel attention|channel relationship/i, "channel attention"],
  [/spatial attention/i, "spatial attention"],
  [/attention/i, "attention"],
  [/efficien|lightweight|mobile|low[- ]cost|computational cost/i, "efficient"],
  [/recalibrat/i, "recalibration"],
  [/regulari[sz]/i, "regularization"],
  [/overfit/i, "overfitting"],
  [/calibrat(?:ion|ed)\b/i, "calibration"],
  [/distill/i, "distillation"],
  [/label noise|noisy labels/i, "label noise"],
  [/augment/i, "augmentation"],
  [/image classification|ImageNet|CIFAR/i, "image classification"],
  [/text classification|sentiment/i, "text classification"],
  [/optimi[sz]er|gradient descent/i, "optimizer"],
  [/learning rate/i, "learning rate"],
  [/small (?:data|datasets?)|few samples|low[- ]data/i, "small data"],
];

const MODALITY_RULES: Record<Modality, RegExp> = {
  vision: /\b(?:images?|vision|visual|pixels?|photos?|convolutional|cnns?|convnets?|cifar(?:-?10{1,2})?|imagenet|mnist|svhn|object detection|segmentation)\b/gi,
  tabular: /\b(?:tabular|tables?|csv|columns?|spreadsheets?|structured data|categorical features?|numeric(?:al)? features?|gradient[- ]boost\w*|xgboost|catboost|lightgbm)\b/gi,
  text: /\b(?:texts?|language|sentences?|documents?|word (?:embeddings?|vectors?)|vocabular(?:y|ies)|nlp|translation|sentiment|reviews?|tokeni[sz]ers?|bert)\b/gi,
};

// Checked in this order, so a tie goes to the more specific surface and architecture is the fallback.
const SURFACE_RULES: readonly (readonly [Surface, RegExp])[] = [
  ["regularisation", /regulari[sz]|overfit|dropout|label smoothing|weight decay|generali[sz]|calibrat|distill|ensembl/gi],
  ["data", /augment|mixup|cutmix|cutout|random erasing|random crop|flip|preprocess|synthetic data|imbalance|noisy labels|label noise/gi],
  ["optimisation", /optimi[sz]er|learning[- ]rate|schedul|gradient descent|\bsgd\b|\badam\w*|momentum|convergence|warm-?up|batch size|hyper-?parameter/gi],
  ["architecture", /architect|\bblocks?\b|\blayers?\b|\bmodules?\b|convolution|attention|transformer|residual|backbone/gi],
];

/** Blocks named or described in the text, in rule order, each once. */
export function inferBlocks(text: string): InferredBlock[] {
  return [...new Set(BLOCK_RULES.filter(([re]) => re.test(text)).flatMap(([, blocks]) => blocks))];
}

/** Retrieval tags for ideas the text talks about, in rule order. */
export function inferTags(text: string): string[] {
  return TAG_RULES.filter(([re]) => re.test(text)).map(([, tag]) => tag);
}

/**
 * Modalities the text is about: every one mentioned at least half as often
 * as the most mentioned one, so a passing "unlike text models" does not tag
 * a vision paper. Empty when none is mentioned.
 */
export function mentionedModalities(text: string): Modality[] {
  const counts = (Object.keys(MODALITY_RULES) as Modality[]).map((m) => ({ m, n: text.match(MODALITY_RULES[m])?.length ?? 0 }));
  const top = Math.max(...counts.map((c) => c.n));
  return counts.filter((c) => c.n > 0 && c.n * 2 >= top).map((c) => c.m);
}

/**
 * mentionedModalities, or all three when none is mentioned: such a text
 * usually describes a generic technique (an optimiser, a schedule), which
 * the corpus marks with all three.
 */
export function inferModalities(text: string): Modality[] {
  const mentioned = mentionedModalities(text);
  return mentioned.length ? mentioned : ["vision", "tabular", "text"];
}

/** The recipe surface the text talks about most. */
export function inferSurface(text: string): Surface {
  let best: Surface = "architecture";
  let bestCount = 0;
  for (const [surface, pattern] of SURFACE_RULES) {
    const n = text.match(pattern)?.length ?? 0;
    if (n > bestCount) {
      best = surface;
      bestCount = n;
    }
  }
  return best;
}
