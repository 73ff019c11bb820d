"""The runner's learning registry (gpu-runner/python/learning/): every task defines what it requires."""
import pytest

import learning
from learning.base import Learning


def test_every_task_defines_what_the_registry_requires():
    for module in learning.MODULES:
        assert learning.missing(type(module.LEARNING)) == [], module.__name__
    assert learning.NAMES == ("classification", "regression", "language_modelling")


def test_a_task_that_omits_something_is_named_with_what_it_omits():
    class Half(Learning):
        name = "half"

        def prediction_width(self, raw):
            return 1

    assert learning.missing(Half) == ["the attribute needs", "score()", "output_shape()", "criterion()",
                                      "encode() or predict()"]


def test_an_unknown_task_is_a_key_error():
    with pytest.raises(KeyError):
        learning.of("segmentation")
