#!/usr/bin/env bash
# Builds bench/cudnn_sink_attention.cpp: cuDNN's fused attention with and without learnable sinks
# (GPT-OSS), for a GPU session. cudnn-frontend is header-only and not part of this repository:
# pass its include folder (e.g. a checkout of NVIDIA/cudnn-frontend at v1.19 or newer, `include/`).
# cuDNN itself (9.13.1 or newer: sinks) is found under CUDA_HOME, or in Python's nvidia-cudnn
# package (the device image's PyTorch ships one).
#   bench/cudnn_sink_attention.sh FRONTEND_INCLUDE_DIR [OUT_BINARY]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
frontend=${1:?usage: bench/cudnn_sink_attention.sh FRONTEND_INCLUDE_DIR [OUT_BINARY]}
out=${2:-build/cudnn_sink_attention}
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -f "$frontend/cudnn_frontend.h" ] || { echo "error: $frontend/cudnn_frontend.h not found (cudnn-frontend's include folder)" >&2; exit 2; }
cudnn_include=$cuda/include cudnn_lib=$cuda/lib64
if [ ! -f "$cudnn_include/cudnn.h" ]; then
  pkg=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null || true)
  [ -n "$pkg" ] && [ -f "$pkg/include/cudnn.h" ] || { echo "error: no cudnn.h under $cuda/include nor in Python's nvidia-cudnn" >&2; exit 2; }
  cudnn_include=$pkg/include cudnn_lib=$pkg/lib
fi
[ -d "$cudnn_lib" ] || cudnn_lib=$cuda/lib
# Python's wheel ships libcudnn.so.9 without the unversioned link.
cudnn_link=-lcudnn
[ -e "$cudnn_lib/libcudnn.so" ] || cudnn_link=-l:libcudnn.so.9
mkdir -p "$(dirname "$out")"
g++ -O2 -std=c++17 -I"$frontend" -I"$cudnn_include" -I"$cuda/include" "$here/cudnn_sink_attention.cpp" \
    -L"$cudnn_lib" -L"$cuda/lib64" -L"$cuda/lib64/stubs" -Wl,-rpath,"$cudnn_lib" "$cudnn_link" -lnvrtc -lcudart -lcuda -o "$out"
echo "built $out (cuDNN from $cudnn_lib)"
