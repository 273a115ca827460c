# Sourced on the GPU machine from the kit that scripts/device_kit.sh packed (copied there as env.sh):
# puts the kit's trainsim, Open MPI and libraries on the paths, finds the machine's CUDA, cuBLAS and
# NCCL libraries (the CUDA toolkit's folders, else the NVIDIA Python wheels), and checks that every
# library the binaries need resolves. Sets TRAINSIM_KIT and TRAINSIM_CORPUS; returns 1 on a gap.
TRAINSIM_KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TRAINSIM_KIT TRAINSIM_CORPUS=$TRAINSIM_KIT/corpus.txt
export OPAL_PREFIX=$TRAINSIM_KIT/ompi
export PATH=$TRAINSIM_KIT/bin:$OPAL_PREFIX/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Shared memory and loopback only: the kit carries no InfiniBand, UCX or libfabric set-up.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo

trainsim_kit_libs() {
  # The kit's libraries: Open MPI's own always, the others only where this machine lacks the soname
  # (its own copy is at least as new, and other programs in the session keep theirs).
  local active=$TRAINSIM_KIT/lib-active lib name
  rm -rf "$active" && mkdir -p "$active"
  for lib in "$TRAINSIM_KIT"/lib/*; do
    name=$(basename "$lib")
    if [[ $name =~ ^lib(mpi|open-pal|open-rte|oshmem|mca_common_|pmix) ]] || ! ldconfig -p | grep -q "^[[:space:]]*$name "; then
      ln -s "$lib" "$active/$name"
    fi
  done
  local dirs=("$active") wanted found d
  for wanted in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2; do
    found=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
      [ -e "$d/$wanted" ] && { found=$d; break; }
    done
    if [ -z "$found" ]; then  # NVIDIA's wheels (PyTorch's nvidia-* packages)
      lib=$(find /opt /usr/local/lib /usr/lib/python3* -path '*nvidia*' -name "$wanted" 2>/dev/null | head -1)
      [ -n "$lib" ] && found=$(dirname "$lib")
    fi
    if [ -n "$found" ]; then
      [[ " ${dirs[*]} " == *" $found "* ]] || dirs+=("$found")
    else
      echo "trainsim kit: $wanted not found on this machine (looked in /usr/local/cuda and NVIDIA's Python wheels)" >&2
    fi
  done
  local IFS=:
  echo "${dirs[*]}"
}
export LD_LIBRARY_PATH=$(trainsim_kit_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The binaries were built with g++ 12: use the kit's libstdc++ only where the machine's is older.
if ldd "$TRAINSIM_KIT/bin/trainsim" 2>&1 | grep -q "GLIBCXX.*not found\|libstdc++.*not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$TRAINSIM_KIT/lib-cxx
fi
if ldd "$TRAINSIM_KIT/bin/trainsim" "$TRAINSIM_KIT/bin/libtrainsim_cuda.so" "$TRAINSIM_KIT/bin/trainsim_tests" | grep "not found"; then
  echo "trainsim kit: libraries above are missing (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)" >&2
  return 1 2>/dev/null || exit 1
fi
