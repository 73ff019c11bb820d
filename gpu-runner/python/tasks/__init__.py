"""The runner's side of the task registry (core/tasks/ is the swarm's): one module per kind of data,
each naming the loaders of its datasets in LOADERS (dataset name -> spec -> Raw), built on the
shared readers of data_files.py. datasets.py loads every dataset through LOADERS and names none.

A module whose datasets are drawn from the spec rather than read from files names them in
GENERATED: the spec's shape, classes, difficulty and seed then belong to what determines the data
(datasets.cache_key).
"""
from tasks import images, signal, synthetic, tabular, text

# In the order of core/tasks/index.ts.
MODULES = (images, tabular, text, synthetic, signal)


def _merged(modules):
    loaders, owner = {}, {}
    for module in modules:
        for name, loader in module.LOADERS.items():
            if name in loaders:
                raise ValueError(f"the dataset {name!r} is in two task modules: {owner[name]} and {module.__name__}")
            loaders[name], owner[name] = loader, module.__name__
    return loaders


LOADERS = _merged(MODULES)
GENERATED = frozenset().union(*(getattr(module, "GENERATED", ()) for module in MODULES))
