"""Whether each model trains its seeds together on a GPU under bf16: stack.Stack's check (the
first stacked forward and backward pass, on copies) run on the CUDA path of the strict stand-in
(cuda_standin.py, whose CudaAutocast refuses what an H200 refused). Run by
test/core/tasks.test.ts over every built-in template:

    python stack_templates.py < models.json

where models.json lists {"name", "code", "class_name", "input_shape", "input_dtype", "vocab_size"};
prints {name: "together" or the reason its seeds would train apart}.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "gpu-runner", "python")]

import pytest  # noqa: E402  (its MonkeyPatch undoes the stand-in)
import torch  # noqa: E402

import accel  # noqa: E402
import trainer  # noqa: E402
from stack import Stack  # noqa: E402
from cuda_standin import cuda_standin  # noqa: E402


class _Probe:
    """What Stack.of reads of a job's data: two examples' targets (here none: the loss is the
    outputs' own, which backpropagates through every layer as a real loss does)."""

    train = range(2)

    @staticmethod
    def batch(idx):
        return None, None


def _probe(model):
    shape = [2, *model["input_shape"]]
    if model["input_dtype"] == "int64":
        return torch.randint(1, model["vocab_size"], shape)
    return torch.randn(shape)


def stacked(model):
    spec = {"source": model["code"], "class_name": model["class_name"], "init_kwargs": {}}
    cls = trainer.model_class(spec)
    models = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        models.append(trainer.build_model(spec, cls))
    acc = accel.choose(None)
    assert acc.cuda, "the stand-in's CUDA path"
    amp = acc.amp_dtype(True)
    assert amp is torch.bfloat16, amp
    stacked = Stack.of(models, _Probe, _probe(model), lambda out, _: out.square().mean(), amp, acc, False)
    return stacked if isinstance(stacked, str) else "together"


def main():
    models = json.load(sys.stdin)
    with pytest.MonkeyPatch.context() as mp, cuda_standin(mp):
        print(json.dumps({m["name"]: stacked(m) for m in models}))


if __name__ == "__main__":
    main()
