"""The export writer's tests (lineage-store/export_writer.py), run with .venv-export's Python, which
alone has the trackers' libraries: scripts/test.sh runs them there, beside the worker's tests."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "lineage-store"))
