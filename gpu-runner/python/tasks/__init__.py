"""The runner's side of the task registry (core/tasks/ is the swarm's): one module per task added
through it, each naming the loaders of its datasets in LOADERS (dataset name -> spec -> Raw).
datasets.py asks here for a name it has no loader of its own for."""
from tasks import signal

MODULES = (signal,)

LOADERS = {name: loader for module in MODULES for name, loader in module.LOADERS.items()}
