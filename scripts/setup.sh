# Sourced by run.sh and test.sh: installs the Debian packages trainsim needs (once, as root, with
# apt-get), configures build/ (Ninja, Release) when needed, and builds. Prints only what it does.
# Environment: TRAINSIM_CUDA=AUTO|ON|OFF (default AUTO), TRAINSIM_BUILD_DIR (default build).

trainsim_packages=(g++ cmake ninja-build libeigen3-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libyaml-cpp-dev catch2 openmpi-bin libopenmpi-dev zlib1g-dev)

trainsim_missing_packages() {
  local missing=()
  for p in "${trainsim_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]}"
}

trainsim_install_packages() {
  local missing
  missing=$(trainsim_missing_packages)
  [ -z "$missing" ] && return 0
  echo "trainsim: installing Debian packages: $missing" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "error: missing packages ($missing) and not root, so apt-get cannot install them" >&2
      echo "hint: run as root, or: sudo apt-get install -y $missing" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq $missing >/dev/null; }; then
    echo "error: apt-get could not install: $missing" >&2
    echo "hint: check the network and the Debian mirror in /etc/apt/sources.list" >&2
    return 1
  fi
}

trainsim_build() {
  local root=$1
  local dir=${TRAINSIM_BUILD_DIR:-$root/build}
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_CUDA="${TRAINSIM_CUDA:-AUTO}" >/dev/null ||
      { echo "error: cmake could not configure $dir" >&2; return 1; }
  fi
  cmake --build "$dir" -- -j"$(nproc)" >"$dir/last-build.log" 2>&1 ||
    { tail -n 40 "$dir/last-build.log" >&2; echo "error: the build failed (full log: $dir/last-build.log)" >&2; return 1; }
}
