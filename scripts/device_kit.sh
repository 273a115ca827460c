#!/usr/bin/env bash
# Packs what a GPU machine without our Debian packages needs to run trainsim's GPU steps: the
# trainsim and trainsim_tests binaries built here for Hopper (sm_90) and trainsim's CUDA module
# (libtrainsim_cuda.so, beside trainsim where it looks for it), the Open MPI they link (libraries,
# plugins, mpirun, help texts: relocated with OPAL_PREFIX), the other shared libraries they need that
# are not glibc or CUDA's, and the byte corpus. CUDA, cuBLAS and NCCL come from the GPU machine
# (kit/env.sh finds them). The kit is a folder inside the checkout that git ignores, so the device
# tool can carry it:  run(command="source .device-kit/env.sh && bench/gpu_session.sh ...", carry=[".device-kit"]).
# Usage: scripts/device_kit.sh [KIT_DIR (default .device-kit)] [CUDA architectures (default 90)]
# KIT_BUILD_DIR=DIR packs the binaries of an existing CUDA build instead of building build-kit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kit=${1:-$root/.device-kit}
archs=${2:-90}
build=${KIT_BUILD_DIR:-$root/build-kit}
multiarch=x86_64-linux-gnu
ompi_libdir=/usr/lib/$multiarch/openmpi/lib

source "$root/scripts/setup.sh"
trainsim_install_packages
if [ -z "${KIT_BUILD_DIR:-}" ]; then
  echo "== building trainsim for CUDA architectures $archs in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$archs" >/dev/null
  ninja -C "$build" trainsim trainsim_tests
fi
[ -f "$build/libtrainsim_cuda.so" ] ||
  { echo "error: $build has no libtrainsim_cuda.so: it is not a CUDA build (configure with -DTRAINSIM_CUDA=ON)" >&2; exit 1; }

rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/lib-cxx" "$kit/ompi/bin" "$kit/ompi/lib/$multiarch/openmpi/lib" "$kit/ompi/share"
cp "$build/trainsim" "$build/libtrainsim_cuda.so" "$build/tests/trainsim_tests" "$kit/bin/"
strip "$kit/bin/trainsim" "$kit/bin/libtrainsim_cuda.so" "$kit/bin/trainsim_tests"
cp "$build/corpus.txt" "$kit/corpus.txt"

# Open MPI under a prefix of its own: OPAL_PREFIX=$kit/ompi maps /usr/... to $kit/ompi/...
cp /usr/bin/orterun "$kit/ompi/bin/mpirun"
cp /usr/bin/orted /usr/bin/ompi_info "$kit/ompi/bin/"
cp -r "$ompi_libdir/openmpi3" "$kit/ompi/lib/$multiarch/openmpi/lib/"
cp -r /usr/share/openmpi "$kit/ompi/share/"

# Every shared library the binaries and plugins load, except glibc's and CUDA's (the GPU machine has
# those); libstdc++ and libgcc_s go to lib-cxx, used only where the machine's own are older.
is_system() { [[ $(basename "$1") =~ ^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64)\.so ]]; }
is_cuda() { [[ $1 == /usr/local/cuda* || $(basename "$1") =~ ^lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-ml)\.so ]]; }
mapfile -t elves < <(printf '%s\n' "$kit"/bin/* "$kit"/ompi/bin/* "$kit"/ompi/lib/$multiarch/openmpi/lib/openmpi3/*.so)
declare -A seen=()
for elf in "${elves[@]}"; do
  while read -r lib; do
    [ -n "$lib" ] && [ -z "${seen[$lib]:-}" ] || continue
    seen[$lib]=1
    is_system "$lib" || is_cuda "$lib" && continue
    case $(basename "$lib") in
      libstdc++.so*|libgcc_s.so*) cp -L "$lib" "$kit/lib-cxx/" ;;
      *) cp -L "$lib" "$kit/lib/" ;;
    esac
  done < <(ldd "$elf" 2>/dev/null | awk '/=> \// {print $3}')
done
# The libmca_common_* the plugins load by their libdir name.
for link in "$ompi_libdir"/libmca_common_*.so; do cp -L "$link" "$kit/ompi/lib/$multiarch/openmpi/lib/"; done

cp "$root/scripts/device_env.sh" "$kit/env.sh"
git -C "$root" rev-parse HEAD >"$kit/COMMIT"
git -C "$root" status --porcelain | grep -q . && echo "(working tree had uncommitted changes)" >>"$kit/COMMIT"
echo "== kit in $kit: $(du -sh "$kit" | cut -f1) (the device tool carries at most 64 MiB with the checkout)"
