#!/usr/bin/env bash
# ./test.sh: installs what is missing, builds build/ (Release), runs the whole test suite (ctest),
# then the sanitizer build and its tests (scripts/sanitize.sh; TRAINSIM_SANITIZE_CI=0 skips it).
# Extra arguments go to every ctest run (e.g. ./test.sh -R memory).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$root/scripts/setup.sh"
trainsim_install_packages
trainsim_build "$root"
cd "${TRAINSIM_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j"$(nproc)" "$@"
[ "${TRAINSIM_SANITIZE_CI:-1}" = 0 ] || "$root/scripts/sanitize.sh" "$@"
