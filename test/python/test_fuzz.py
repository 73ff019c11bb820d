"""The worker's doors, fuzzed with Hypothesis: a job spec with any field replaced by any JSON value,
and a person's CSV or signal file of any shape, each end as a normalised spec or a loaded dataset,
or as TaskFailure(invalid_config) naming what is wrong, never another exception.

The numbers of inputs are set here (max_examples) and stated in docs/BENCHMARKS.md's reliability table.
"""
import copy

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

# The same inputs on every run (a failure is a bug to fix, never a run's luck), and no example
# database written into the checkout.
settings.register_profile("suite", derandomize=True, database=None)
settings.load_profile("suite")

import datasets
import specs
from conftest import full_spec
from failures import TaskFailure

SOURCE = "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"
IDS = {"dataset_id": "0123456789abcdef", "split_id": "fedcba9876543210"}
VALID = {
    "train": full_spec("train", source=SOURCE, **IDS),
    "summarize": full_spec("summarize", source=SOURCE),
    "script": full_spec("script", language="bash", source="echo hi", files={"data/in.txt": "42"}),
}
SPEC_EXAMPLES = 400
FILE_EXAMPLES = 150

json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def paths(spec, prefix=()):
    """Every key path of a spec, nested objects included."""
    for key, value in spec.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from paths(value, prefix + (key,))


def replaced(spec, path, value):
    out = copy.deepcopy(spec)
    at = out
    for key in path[:-1]:
        at = at[key]
    if value is _DELETE:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


_DELETE = object()


def refused_or_normalised(call):
    try:
        out = call()
    except TaskFailure as failure:
        assert failure.label == "invalid_config" and failure.message and "\n" not in failure.message
        return None
    return out


@pytest.mark.parametrize("task", sorted(VALID))
@settings(max_examples=SPEC_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_spec_with_any_field_replaced_is_normalised_or_refused(task, data):
    spec = VALID[task]
    path = data.draw(st.sampled_from(sorted(paths(spec))))
    value = data.draw(json_value | st.just(_DELETE))
    out = refused_or_normalised(lambda: specs.validate(task, replaced(spec, path, value)))
    if out is not None:
        assert specs.validate(task, out) == out


@settings(max_examples=SPEC_EXAMPLES, deadline=None)
@given(spec=json_value, task=st.sampled_from(["train", "summarize", "script", "other", ""]))
def test_any_value_as_a_spec_is_refused_or_normalised(spec, task):
    refused_or_normalised(lambda: specs.validate(task, spec))


cell = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
csv_text = st.one_of(
    st.text(max_size=300),
    st.lists(st.lists(st.one_of(cell, st.integers(-5, 5).map(str), st.floats(allow_nan=True).map(str)), min_size=1, max_size=5),
             min_size=1, max_size=25).map(lambda rows: "\n".join(",".join(r) for r in rows)),
)


@settings(max_examples=FILE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=csv_text, name=st.sampled_from(["csv", "signal"]), task=st.sampled_from(["classification", "regression"]))
# Found in a fresh clone's suite: a quote left open makes a column name span lines, and the
# refusal that listed the columns was two lines.
@example(text='"0\n0', name="csv", task="classification")
@example(text='"0\n0', name="signal", task="classification")
def test_a_persons_file_of_any_shape_loads_or_is_refused(tmp_path, text, name, task):
    path = tmp_path / "data.csv"
    path.write_text(text)
    header = text.split("\n", 1)[0].split(",")
    target = header[-1] if header else "y"
    spec = {**full_spec("train")["dataset"], "name": name, "data_dir": str(path), "target_column": target, "task": task}
    refused_or_normalised(lambda: datasets.load(spec))
