#!/usr/bin/env bash
# ./run.sh [ARGS]: installs what is missing, builds build/ (Release) if needed, runs build/trainsim ARGS.
# With no ARGS it runs the demo (scripts/demo.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$root/scripts/setup.sh"
trainsim_install_packages
trainsim_build "$root"
if [ $# -eq 0 ]; then
  exec "$root/scripts/demo.sh" "${TRAINSIM_BUILD_DIR:-$root/build}/trainsim"
fi
exec "${TRAINSIM_BUILD_DIR:-$root/build}/trainsim" "$@"
