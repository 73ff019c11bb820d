"""The referee: the runner's trusted scorer, outside the sandbox.

A model runs in the same process as its training loop, so it can read anything
that process holds and rewrite the code that scores it. The referee is the one
worker that holds validation and test labels, and it runs only this
repository's code (loaders, splits, metrics), never a model's:

- prepare: load and split a dataset and publish what its jobs may see
  (datasets.publish); answers the split's ids and the dataset's description;
- score: the metrics of predictions a job returned, against labels only the
  referee has (several seeds' predictions at once are scored as one model).

It speaks zygote.py's JSON-lines protocol (ready, then an event and done per
job), so the runner drives it with the same Worker class:

    python3 -u gpu-runner/python/referee.py PUBLIC_DIR PRIVATE_DIR
"""

import json
import os
import sys
import time
import traceback
from collections import OrderedDict

import datasets
import learning
import metrics
import specs
from failures import TaskFailure, tail

PARTS = ("val", "test")


class Referee:
    def __init__(self, public_root, private_root):
        self.public_root = public_root
        self.private_root = private_root
        os.makedirs(public_root, exist_ok=True)
        os.makedirs(private_root, mode=0o700, exist_ok=True)
        # cache key -> (Raw, {split id: Split}); least recently used first.
        self.cache = OrderedDict()
        self.cache_limit = int(os.environ.get("RUNNER_DATASET_CACHE_MB", "2048")) * 2 ** 20

    def split(self, spec):
        key = datasets.cache_key(spec)
        if key not in self.cache:
            self.cache[key] = (datasets.load(spec), {})
            while len(self.cache) > 1 and sum(raw.nbytes for raw, _ in self.cache.values()) > self.cache_limit:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        raw, splits = self.cache[key]
        sid = datasets.split_id(spec)
        if sid not in splits:
            splits[sid] = datasets.split(raw, spec)
        return splits[sid]

    def prepare(self, spec):
        dataset = specs.dataset(spec)
        split = self.split(dataset)
        published = datasets.publish(split, dataset, self.public_root, self.private_root)
        return {"kind": "prepared", **published, "info": split.describe()}

    def score(self, spec):
        dataset = specs.dataset(spec)
        part = spec.get("part")
        if part not in PARTS:
            raise TaskFailure("invalid_config", f"spec.part must be val or test, got {part!r}")
        split = self.split(dataset)
        raw = split.raw
        y = raw.y_train[split.val] if part == "val" else raw.y_test[split.test]
        width = raw.prediction_width
        predictions = spec.get("predictions")
        if not isinstance(predictions, list) or not predictions:
            raise TaskFailure("invalid_config", "spec.predictions must be a non-empty list")
        try:
            decoded = [metrics.decode(p, len(y), width, f"{part} predictions") for p in predictions]
        except ValueError as exc:
            # A job's predictions are the model's output: a wrong shape is its failure.
            raise TaskFailure("crash", str(exc)) from exc
        scores = learning.of(raw.task).score(y, decoded, width, part, bool(spec.get("full")))
        return {"kind": "scores", "examples": len(y), **scores}

    def answer(self, message):
        task, spec = message.get("task"), message.get("spec")
        try:
            if not isinstance(spec, dict):
                raise TaskFailure("invalid_config", f"spec must be an object, got {spec!r}")
            if task == "prepare":
                return self.prepare(spec)
            if task == "score":
                return self.score(spec)
            raise TaskFailure("invalid_config", f"the referee has no task {task!r}; expected prepare or score")
        except TaskFailure as failure:
            return failure.event()
        except Exception as exc:  # a bug of the runner: report it and keep serving
            return {"kind": "failure", "label": "crash", "message": f"referee error: {type(exc).__name__}: {exc}",
                    "traceback": tail(traceback.format_exc())}

    def serve(self, lines, send):
        send({"type": "ready", "device": {"kind": "referee", "name": "referee", "torch_version": ""}})
        for line in lines:
            t0 = time.monotonic()
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or message.get("type") != "run":
                continue
            job_id = message.get("job_id")
            send({"type": "event", "job_id": job_id, "event": self.answer(message)})
            send({"type": "done", "job_id": job_id, "seconds": time.monotonic() - t0})


def main():
    # stdout is the protocol, as in the zygote: nothing else that prints may reach it.
    protocol = os.dup(1)
    os.dup2(2, 1)

    def send(message):
        view = memoryview((json.dumps(message, allow_nan=False, separators=(",", ":")) + "\n").encode())
        while view:
            view = view[os.write(protocol, view):]

    public_root, private_root = sys.argv[1:3]
    try:
        Referee(public_root, private_root).serve(sys.stdin, send)
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
