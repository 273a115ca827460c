// torchao's measured speedup of a float8 linear with dynamic row-wise scaling over the same
// linear in bf16, forward + backward, by the forward's M (rows), K (in) and N (out) on an H100
// (pytorch/ao@fdddb2cf, 2025-06-06, torchao/float8/README.md "Rowwise scaling" and
// docs/static/fp8-rowwise-perf.png: LayerNorm -> Linear -> Sigmoid, torch.compile, PyTorch
// 2.8.0a0+git48807d5; reproduced by benchmarks/float8/float8_roofline.py --shape_gen_name sweep
// --float8_recipe_name rowwise). The ratio covers everything the recipe adds: the row- and
// column-wise casts of input, weight and output gradient, and CUTLASS's row-wise scaled GEMM.
#pragma once

#include <cstdint>

namespace trainsim {

// Trilinear in log2(M), log2(K), log2(N) between the measured points 1024 .. 32768; below 1024
// the first octave's slope continues to 512 and holds there (smaller shapes lose more to the
// casts, as the table's first octave does everywhere), above 32768 the last point holds (not
// measured). Always >= 0.24.
double torchao_rowwise_speedup(int64_t m, int64_t k, int64_t n);

}  // namespace trainsim
