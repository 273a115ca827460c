// Token + position embedding of kernels.cuh: out[r] = wte[tokens[r]] + wpe[r % seq] (no wpe: RoPE). The backward
// adds into fp32 gradients: dwte with atomics (a token may appear in many rows), dwpe by one
// thread per (position, column) summing its rows r = pos, pos + seq, ... (deterministic). With
// context parallelism (context_parallel.cuh's *_at launchers) row r is at the true position
// positions[r % seq] instead: the same kernels, reading the table when there is one.
#include "kernels/cuda/context_parallel.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

template <int kVec>
__global__ void embedding_forward_kernel(const int32_t* tokens, const bf16* wte, const bf16* wpe, const int32_t* positions, bf16* out,
                                         int64_t rows, int64_t seq, int64_t hidden) {
  const int64_t groups = hidden / kVec, total = rows * groups;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / groups, c = (i % groups) * kVec;
    const bf16* t = wte + static_cast<int64_t>(tokens[r]) * hidden + c;
    bf16* o = out + r * hidden + c;
    if (wpe == nullptr) {  // RoPE models: the token embedding alone
      if constexpr (kVec == 8) {
        *reinterpret_cast<Bf16x8*>(o) = *reinterpret_cast<const Bf16x8*>(t);
      } else {
        *o = *t;
      }
      continue;
    }
    const int64_t position = positions == nullptr ? r % seq : positions[r % seq];
    const bf16* p = wpe + position * hidden + c;
    if constexpr (kVec == 8) {
      const Bf16x8 a = *reinterpret_cast<const Bf16x8*>(t), b = *reinterpret_cast<const Bf16x8*>(p);
      Bf16x8 s;
#pragma unroll
      for (int j = 0; j < 8; ++j) s.v[j] = __float2bfloat16(__bfloat162float(a.v[j]) + __bfloat162float(b.v[j]));
      *reinterpret_cast<Bf16x8*>(o) = s;
    } else {
      *o = __float2bfloat16(__bfloat162float(*t) + __bfloat162float(*p));
    }
  }
}

__global__ void embedding_token_grad_kernel(const int32_t* tokens, const bf16* dout, float* dwte, int64_t rows,
                                            int64_t hidden) {
  for (int64_t i = global_thread(); i < rows * hidden; i += grid_threads()) {
    const int64_t r = i / hidden, c = i % hidden;
    atomicAdd(dwte + static_cast<int64_t>(tokens[r]) * hidden + c, __bfloat162float(dout[i]));
  }
}

// Thread (i, c) sums the rows r = i, i + seq, ... into row positions[i] (or i) of dwpe: the
// positions of a sequence's rows are distinct, so no two threads add to one element.
__global__ void embedding_position_grad_kernel(const bf16* dout, float* dwpe, const int32_t* positions, int64_t rows, int64_t seq,
                                               int64_t hidden) {
  const int64_t count = rows < seq ? rows : seq;
  for (int64_t i = global_thread(); i < count * hidden; i += grid_threads()) {
    const int64_t pos = i / hidden, c = i % hidden;
    float sum = 0.0f;
    for (int64_t r = pos; r < rows; r += seq) sum += __bfloat162float(dout[r * hidden + c]);
    dwpe[(positions == nullptr ? pos : positions[pos]) * hidden + c] += sum;
  }
}

}  // namespace

void embedding_forward(const int32_t* tokens, const bf16* wte, const bf16* wpe, bf16* out, int64_t rows, int64_t seq,
                       int64_t hidden, cudaStream_t stream) {
  embedding_forward_at(tokens, wte, wpe, nullptr, out, rows, seq, hidden, stream);
}

void embedding_backward(const int32_t* tokens, const bf16* dout, float* dwte, float* dwpe, int64_t rows, int64_t seq,
                        int64_t hidden, cudaStream_t stream) {
  embedding_backward_at(tokens, dout, dwte, dwpe, nullptr, rows, seq, hidden, stream);
}

void embedding_forward_at(const int32_t* tokens, const bf16* wte, const bf16* wpe, const int32_t* positions, bf16* out, int64_t rows,
                          int64_t seq_rows, int64_t hidden, cudaStream_t stream) {
  if (rows <= 0 || hidden <= 0) return;
  if (hidden % 8 == 0 && aligned16(wte) && aligned16(wpe) && aligned16(out)) {
    embedding_forward_kernel<8><<<grid_for(rows * hidden / 8), kThreads, 0, stream>>>(tokens, wte, wpe, positions, out, rows,
                                                                                      seq_rows, hidden);
  } else {
    embedding_forward_kernel<1><<<grid_for(rows * hidden), kThreads, 0, stream>>>(tokens, wte, wpe, positions, out, rows, seq_rows,
                                                                                   hidden);
  }
  check_launch("embedding_forward");
}

void embedding_backward_at(const int32_t* tokens, const bf16* dout, float* dwte, float* dwpe, const int32_t* positions, int64_t rows,
                           int64_t seq_rows, int64_t hidden, cudaStream_t stream) {
  if (rows <= 0 || hidden <= 0) return;
  if (dwte != nullptr) {  // null: the vocabulary-parallel path scatters the tokens itself (vocab_parallel.cuh)
    embedding_token_grad_kernel<<<grid_for(rows * hidden), kThreads, 0, stream>>>(tokens, dout, dwte, rows, hidden);
    check_launch("embedding_backward (tokens)");
  }
  if (dwpe == nullptr) return;
  embedding_position_grad_kernel<<<grid_for((rows < seq_rows ? rows : seq_rows) * hidden), kThreads, 0, stream>>>(
      dout, dwpe, positions, rows, seq_rows, hidden);
  check_launch("embedding_backward (positions)");
}

}  // namespace trainsim::cuda
