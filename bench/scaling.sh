#!/usr/bin/env bash
# One-shot scaling run for a many-core machine (bench/scaling.py says what it times).
# With a folder .whl/ (a machine without network): the wheels in it (rpp's own, built here with
# `pip wheel --no-deps -w .whl .`, pytrec_eval and the dask extra) are installed with --no-deps
# into $SITE beside the python's own packages (numpy, click, ... must be there already).
# Without it: a venv .venv-scaling from the package index (needs a C compiler for rpp's kernel).
# Arguments go to bench/scaling.py (e.g. --small, --budget, --output).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -d .whl ]; then
    SITE=${SITE:-/tmp/rpp-site}
    "$PY" -m pip install --quiet --no-index --no-deps --no-compile --upgrade --target "$SITE" .whl/*.whl
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    RPP="$SITE/bin/rpp"
    PACKAGES="$SITE"
else
    [ -x .venv-scaling/bin/python ] || "$PY" -m venv .venv-scaling
    .venv-scaling/bin/python -m pip install --quiet -e '.[dask]'
    PY=.venv-scaling/bin/python
    RPP="$PWD/.venv-scaling/bin/rpp"
    PACKAGES="$PWD/rpp_cli"
fi
# Byte-code, as a normal pip install leaves it: where PYTHONDONTWRITEBYTECODE is set (the lent
# 16-core machines set it), a package installed without it compiles every module at every
# start, 0.4 s of each command there, holding the GIL while the runs are read.
"$PY" -m compileall -q "$PACKAGES" >/dev/null
"$PY" bench/scaling.py --rpp "$RPP" "$@"
