import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { protoJson } from "../../core/proto-json.js";
import { EvalResultSchema, SummarizeResponseSchema } from "../../proto/gen/research/v1/runner_pb.js";

describe("protoJson", () => {
  it("writes 64-bit integers as JSON numbers, in nested messages and lists too", () => {
    const summary = create(SummarizeResponseSchema, { totalParams: 20538n, flops: 3_000_000n, outputShape: [1n, 10n], layers: [{ name: "fc", params: 650n, outputShape: [1n, 10n] }] });
    expect(protoJson(SummarizeResponseSchema, summary)).toMatchObject({ total_params: 20538, flops: 3_000_000, output_shape: [1, 10], layers: [{ name: "fc", params: 650, output_shape: [1, 10] }] });
    expect(protoJson(EvalResultSchema, create(EvalResultSchema, { params: 20538n }))).toMatchObject({ params: 20538 });
  });

  it("keeps a value a double cannot hold exactly as its string", () => {
    const big = 2n ** 53n + 1n;
    expect(protoJson(EvalResultSchema, create(EvalResultSchema, { params: big })).params).toBe(big.toString());
  });
});
