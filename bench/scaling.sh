#!/usr/bin/env bash
# One-shot scaling run for a many-core machine without network (bench/scaling.py says what
# it times). Builds rpp from this tree into .venv-scaling: from the wheels in .whl/ when that
# folder exists (pip install --no-index), else from the package index. Needs a C compiler and
# Python's headers for rpp's kernel. Arguments go to bench/scaling.py (e.g. --small).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv-scaling/bin/python ]; then
    "$PY" -m venv .venv-scaling
fi
PIP=(.venv-scaling/bin/python -m pip install --quiet)
if [ -d .whl ]; then
    PIP+=(--no-index --find-links .whl)
fi
"${PIP[@]}" -e '.[dask]'
.venv-scaling/bin/python bench/scaling.py --rpp "$PWD/.venv-scaling/bin/rpp" "$@" | tee bench/scaling.md
