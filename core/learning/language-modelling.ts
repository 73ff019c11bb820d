/** Byte-level language modelling: at every position of a window of bytes, a score per byte value for the next; decided on bits per byte. */
import type { Learning } from "./learning.js";

/** A language model that guesses every byte value alike scores log2(256) bits per byte. */
const UNIFORM_BITS_PER_BYTE = 8;

export const LANGUAGE_MODELLING = {
  name: "language_modelling",
  metrics: { bits_per_byte: { higherIsBetter: false, proportion: false, label: "bits per byte", example: "below 2" } },
  ranges: { bits_per_byte: "non_negative", perplexity: "non_negative", loss: "non_negative" },
  outputWidth: (info) => info.vocabSize,
  perPosition: true,
  classes: false,
  describeTarget: (info) => `next-byte prediction over ${info.vocabSize} byte values`,
  refusal: (m) => `${m.metric} needs a text corpus, e.g. "text:/data/corpus.txt", not ${m.dataset}`,
  gateMiss(aggregated) {
    const bits = aggregated.val_bits_per_byte?.mean ?? Number.POSITIVE_INFINITY;
    if (bits < UNIFORM_BITS_PER_BYTE) return undefined;
    return { message: `mean validation bits per byte ${bits.toFixed(3)} is no better than a uniform guess over 256 byte values (8)`, reason: "no better than a uniform guess" };
  },
} as const satisfies Learning;
