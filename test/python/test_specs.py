"""specs.validate: the zygote's last line against nonsense in a job spec.

Bounds are specs.py's to choose, so these tests name the field and the
offending value in error messages but not the bounds themselves.
"""

import math
import re

import pytest

import specs
from conftest import full_spec
from failures import TaskFailure
from tasks.text import TEXT_VOCAB

SOURCE = "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"


def train_spec(**overrides):
    ids = {"dataset_id": "0123456789abcdef", "split_id": "fedcba9876543210"}
    return full_spec("train", **{"source": SOURCE, **ids, **overrides})


MINIMAL = {
    "train": train_spec(),
    "summarize": full_spec("summarize", source=SOURCE),
    "script": full_spec("script", language="bash", source="echo hi", files={"data/in.txt": "42"}),
}


@pytest.mark.parametrize("task", sorted(MINIMAL))
def test_a_normalised_spec_validates_to_itself(task):
    once = specs.validate(task, MINIMAL[task])
    assert specs.validate(task, once) == once


def test_unknown_fields_are_dropped():
    out = specs.validate("train", train_spec(bogus=1, recipe={"optimizer": "sgd", "typo": 3}))
    assert "bogus" not in out and "typo" not in out["recipe"]
    assert out["recipe"]["optimizer"] == "sgd"


@pytest.mark.parametrize("path", [("limits",), ("limits", "wall_seconds"), ("recipe", "momentum"),
                                  ("recipe", "augment", "cutout"), ("recipe", "ema_decay"), ("dataset", "val_fraction"), ("seed",), ("together",)])
def test_every_field_is_required(path):
    spec = train_spec()
    parent = spec
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    where = ".".join(path[:-1]) if len(path) > 1 else "spec"
    with pytest.raises(TaskFailure, match=rf"^{re.escape(where)}\.{path[-1]} is missing$"):
        specs.validate("train", spec)


def test_but_the_text_vocabulary_which_only_the_worker_knows():
    assert specs.validate("summarize", MINIMAL["summarize"])["vocab_size"] == TEXT_VOCAB


def test_numbers_are_coerced_only_where_nothing_is_lost():
    recipe = specs.validate("train", train_spec(recipe={"lr": 1, "batch_size": 32.0}))["recipe"]
    assert recipe["lr"] == 1.0 and isinstance(recipe["lr"], float)
    assert recipe["batch_size"] == 32 and isinstance(recipe["batch_size"], int)


BAD = [
    ("train", "not an object", r"^spec must be an object, got 'not an object'$"),
    ("fly", full_spec("fly"), r"^unknown task 'fly'; expected train, summarize or script$"),
    ("train", train_spec(recipe={"optimizer": "lion"}), r"^recipe\.optimizer = 'lion': expected adam, adamw or sgd$"),
    ("train", train_spec(recipe={"batch_size": -1}), r"^recipe\.batch_size = -1: expected "),
    ("train", train_spec(recipe={"batch_size": 32.5}), r"^recipe\.batch_size must be int, got 32\.5$"),
    ("train", train_spec(recipe={"epochs": True}), r"^recipe\.epochs must be int, got True$"),
    ("train", train_spec(recipe={"lr": math.nan}), r"^recipe\.lr must be a finite number, got nan$"),
    ("train", train_spec(recipe={"lr": "0.1"}), r"^recipe\.lr must be a finite number, got '0\.1'$"),
    ("train", train_spec(recipe={"ema_decay": 1}), r"^recipe\.ema_decay = 1\.0: expected "),
    ("train", train_spec(recipe={"ema_decay": -0.5}), r"^recipe\.ema_decay = -0\.5: expected "),
    ("train", train_spec(recipe={"ema_decay": 0.9, "swa": True}), r"^recipe\.swa and recipe\.ema_decay are two weight averages"),
    ("train", train_spec(recipe={"amp": 1}), r"^recipe\.amp must be bool, got 1$"),
    ("train", train_spec(recipe={"augment": {"crop_padding": 1000}}), r"^recipe\.augment\.crop_padding = 1000: expected "),
    ("train", train_spec(recipe={"optimizer": "sgd", "nesterov": True, "momentum": 0}),
     r"^recipe\.nesterov needs recipe\.momentum > 0$"),
    ("train", train_spec(recipe={"epochs": 2, "warmup_epochs": 5}), r"^recipe\.warmup_epochs = 5 must be below recipe\.epochs = 2$"),
    ("train", train_spec(recipe=[]), r"^spec\.recipe must be an object, got \[\]$"),
    ("train", train_spec(limits={"memory_mb": 0}), r"^limits\.memory_mb = 0: expected "),
    ("train", train_spec(limits={"wall_seconds": -1}), r"^limits\.wall_seconds = -1\.0: expected "),
    ("train", train_spec(dataset={"name": "imagenet"}), r"^dataset\.name = 'imagenet': expected one of .*digits"),
    ("train", train_spec(dataset={"name": "csv"}), r"^dataset\.target_column is required for the csv dataset$"),
    ("train", train_spec(dataset={"name": "synthetic", "shape": [], "num_classes": 3}),
     r"^dataset\.shape = \[\]: synthetic data needs 1 to 3 dimensions"),
    ("train", train_spec(dataset={"name": "synthetic", "shape": [4096, 4096], "num_classes": 3}),
     r"^dataset\.shape = \[4096, 4096\]: synthetic data needs .* at most"),
    ("train", train_spec(dataset={"name": "synthetic", "shape": [8], "num_classes": 1}),
     r"^dataset\.num_classes = 1: synthetic data needs"),
    ("train", train_spec(dataset={"name": "synthetic", "shape": [8, True], "num_classes": 3}),
     r"^dataset\.shape must be a list of positive integers, got \[8, True\]$"),
    ("train", train_spec(dataset={"name": "digits", "val_fraction": 1}), r"^dataset\.val_fraction = 1\.0: expected "),
    ("train", train_spec(class_name="1nope"), r"^spec\.class_name = '1nope': expected a Python identifier$"),
    ("train", train_spec(source="  \n"), r"^spec\.source = '  \\n': expected Python source$"),
    ("train", train_spec(seed=2 ** 32), r"^spec\.seed = 4294967296: expected "),
    ("train", train_spec(together=9), r"^spec\.together = 9: expected in \[1, 8\]"),
    ("train", train_spec(seed=2 ** 32 - 1, together=2), r"^spec\.together = 2: expected .* its seeds below 2\^32$"),
    ("train", train_spec(together=2, weights="load"), r"^spec\.together: loaded weights are evaluated one seed a job$"),
    ("train", train_spec(init_kwargs=[1]), r"^spec\.init_kwargs must be an object, got \[1\]$"),
    ("summarize", {**MINIMAL["summarize"], "input_shape": []}, r"^spec\.input_shape must be a non-empty list of positive integers"),
    ("summarize", {**MINIMAL["summarize"], "input_dtype": "float16"}, r"^spec\.input_dtype = 'float16': expected float32 or int64$"),
    ("train", train_spec(dataset={"name": ""}), r"^dataset\.name = '': expected one of "),
    ("train", train_spec(split_id="../../etc"), r"^spec\.split_id = '\.\./\.\./etc': expected a published id$"),
    ("summarize", {}, r"^spec\.limits is missing$"),
    ("script", {**MINIMAL["script"], "language": "ruby"}, r"^spec\.language = 'ruby': expected python or bash$"),
    ("script", {**MINIMAL["script"], "timeout_s": 10 ** 6}, r"^spec\.timeout_s = 1000000\.0: expected "),
    ("script", {**MINIMAL["script"], "files": {"../x": ""}}, r"^spec\.files: '\.\./x' is not a relative path"),
    ("script", {**MINIMAL["script"], "files": {"/etc/passwd": ""}}, r"^spec\.files: '/etc/passwd' is not a relative path"),
    ("script", {**MINIMAL["script"], "files": {"a//b": ""}}, r"^spec\.files: 'a//b' is not a relative path"),
    ("script", {**MINIMAL["script"], "files": {"a\0b": ""}}, r"^spec\.files: 'a\\x00b' is not a relative path"),
    ("script", {**MINIMAL["script"], "files": {"a.txt": 3}}, r"^spec\.files\['a\.txt'\] must be text, got int$"),
]


@pytest.mark.parametrize("task, spec, message", BAD, ids=[re.sub(r"[\\^]", "", m.split(" ")[0]) for _, _, m in BAD])
def test_a_bad_spec_is_invalid_config_naming_the_field(task, spec, message):
    with pytest.raises(TaskFailure) as caught:
        specs.validate(task, spec)
    assert caught.value.label == "invalid_config"
    assert "\n" not in caught.value.message
    assert re.search(message, caught.value.message), caught.value.message
