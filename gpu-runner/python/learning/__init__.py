"""The runner's registry of learning, one module per proto Task (core/learning/ is the swarm's
twin): how a model of the task learns (targets, batches, output shape, loss) and how the
referee scores it. The trainer, the referee and the loaders ask here; none of them names a task.
test/python/test_learning.py fails when a module omits what base.Learning requires."""
from learning import classification, language_modelling, regression
from learning.base import Learning

# In the proto enum's order (test/core/closed-sets.test.ts holds the two together).
MODULES = (classification, regression, language_modelling)

BY_NAME = {module.LEARNING.name: module.LEARNING for module in MODULES}
NAMES = tuple(BY_NAME)


def of(task):
    """The learning of a task by its snake_case name (KeyError for one the runner does not know)."""
    return BY_NAME[task]


# What a task must define itself: base.Learning's defaults cannot answer these.
REQUIRED = ("prediction_width", "score", "output_shape", "criterion")


def missing(cls):
    """What a Learning subclass leaves undefined of what the registry requires."""
    out = [f"the attribute {a}" for a in ("name", "needs") if not getattr(cls, a)]
    out += [f"{m}()" for m in REQUIRED if getattr(cls, m) is getattr(Learning, m)]
    if cls.encode is Learning.encode and cls.predict is Learning.predict:
        out.append("encode() or predict()")
    return out
