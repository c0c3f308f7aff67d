#!/usr/bin/env bash
# The gate step of action.yml: rpp check on the action's inputs (environment variables, so
# that no input is read as shell code), its verdicts appended to $GITHUB_STEP_SUMMARY by rpp
# itself, and its exit status the step's (0 pass, 1 a regression, 2 bad input).
set -u
set -f  # candidates and args are split on whitespace, never globbed
: "${RPP_QRELS:?the qrels input is required}" "${RPP_BASELINE:?the baseline input is required}"
: "${RPP_CANDIDATES:?the candidates input is required}"
# shellcheck disable=SC2206
candidates=(${RPP_CANDIDATES})
# shellcheck disable=SC2206
args=(${RPP_ARGS:-})
exec rpp check "${args[@]}" --baseline "$RPP_BASELINE" -- "$RPP_QRELS" "${candidates[@]}"
