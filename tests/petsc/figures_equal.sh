#!/usr/bin/env bash
# Runs a program twice (reference command, then test command) and checks that the result lines
# ("... iterations I true_residual R ...") print the same iteration count and true residual
# (lossless storage: the same solve, bit for bit).
#   figures_equal.sh "REFERENCE COMMAND" "TEST COMMAND" [REGEX the test output must match]
exec bash "$(dirname "$0")/iterations_compare.sh" exact - "$1" "$2" "${3:-}"
