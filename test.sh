#!/usr/bin/env bash
# ./test.sh: installs what is missing, builds build/ (Release), runs the whole test suite (ctest).
# Extra arguments go to ctest (e.g. ./test.sh -R memory).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$root/scripts/setup.sh"
trainsim_install_packages
trainsim_build "$root"
cd "${TRAINSIM_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j"$(nproc)" "$@"
