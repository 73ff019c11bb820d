"""Shared set-up for the tests of the runner's Python worker and the compiler's helper modules.

The worker's modules import each other by bare name (the zygote runs with its
own directory on sys.path), so the tests import them the same way.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER_DIR = os.path.join(REPO, "gpu-runner", "python")
sys.path[:0] = [WORKER_DIR, os.path.join(REPO, "core", "compiler")]

# Two cores shared with the rest of the suite; tiny models gain nothing from more threads.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def fixtures_dir():
    """The files of test/fixtures/make_datasets.py, in the cache directory test/helpers/fixtures.ts uses."""
    script = os.path.join(REPO, "test", "fixtures", "make_datasets.py")
    with open(script, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"research-swarm-fixtures-{digest}")
    if not os.path.isdir(path):
        partial = f"{path}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([sys.executable, script, partial], check=True)
        try:
            os.rename(partial, path)
        except OSError:
            if not os.path.isdir(path):
                raise
            shutil.rmtree(partial)  # a concurrent run wrote the same bytes first
    return path
