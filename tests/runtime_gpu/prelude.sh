# Sourced by the GPU test scripts: exit 77 (ctest: skipped) when nvidia-smi -L lists no GPU; a work
# folder $work removed on exit; mpirun allowed to run as root and to oversubscribe.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "no GPU (nvidia-smi -L lists none): skipped"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
