// What the flash attention forward (attention_flash_forward.cu) and backward
// (attention_flash_backward.cu) share: the tile geometry, the zero-padded tile loads from the qkv
// and dO layouts of kernels.cuh into shared memory, the one-warp WMMA products on those tiles, and
// the host-side shape check and shared-memory opt-in. Internal to kernels/cuda/; included
// by those two .cu files and attention_ring_blocks.cu. Tiles are 64 rows x D columns of bf16 (D = 64
// or 128, head_dim zero-padded to it), row pitch D + kPad. A Geometry describes either causal
// self-attention over qkv (geometry(): Q, K, V in one buffer, every query sees the keys up to its
// own position) or one block of ring attention (context parallelism, attention_ring_blocks.cu): a
// query chunk in qkv against a key chunk in a separate [K | V] buffer, with a diagonal offset
// between their positions; the kernels read only the Geometry's fields, so both run the same code.
#pragma once

#include <mma.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda::flash {

constexpr int kTile = 64;       // query rows per block, keys per tile
constexpr int kWarps = 4;       // 16 rows (queries or keys) each
constexpr int kWarpRows = 16;
constexpr int kPad = 8;         // bf16 padding per shared row: fewer bank conflicts, rows stay 16-byte aligned
constexpr int kPLd = kTile + kPad;  // row pitch of a (16, 64) bf16 P or dS tile
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Bytes of one (64, D) bf16 tile; a multiple of 32, so tiles laid end to end keep WMMA's alignment.
template <int D>
constexpr size_t tile_bytes() {
  return size_t{kTile} * (D + kPad) * 2;
}

// GPU-CHECK: the self-attention path reads every field below since context parallelism was added
// (geometry() sets them to the old expressions: keys = seq, diagonal 0, K and V in qkv); run
// `trainsim_tests "CUDA flash attention*"` before the ring's tests: it was not run on a GPU since.
struct Geometry {
  int seq = 0, heads = 0, kv_heads = 0, head_dim = 0, group = 1;  // seq: queries per sequence
  int keys = 0;             // keys per sequence (self-attention: seq)
  int diagonal = 0;         // query i sees key j iff j <= i + diagonal (self-attention: 0; never negative)
  int64_t stride = 0;       // row length of the Q rows: qkv's, (heads + 2 kv_heads) * head_dim
  int64_t kv_stride = 0;    // row length of the K, V (and dK, dV) rows (self-attention: stride)
  int64_t k_col = 0, v_col = 0;  // column of kv head 0's K and V (and dK, dV) in those rows
  int64_t dq_stride = 0;    // row length of the dQ rows (self-attention: stride, dQ lands in dqkv)
  // Rows from one sequence's first to the next's: q_rows on the query side (Q, O, dO, dQ, and the
  // lse and D entries of each (batch, head)), kv_rows on the key side. Self-attention: seq both.
  int64_t q_rows = 0, kv_rows = 0;
  float scale = 0.0f, scale_log2 = 0.0f;
  bool vec_qkv = false, vec_dout = false;  // 16-byte loads allowed (Q, K, V; dO)
};

using Acc = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

__host__ __device__ inline int tiles_of(int seq) { return (seq + kTile - 1) / kTile; }

// dst (64 x D, row pitch D + kPad) = rows [0, rows) x columns [0, head_dim) of src (row pitch
// `stride`), zeros elsewhere. The whole block takes part.
template <int D>
__device__ inline void load_tile(bf16* dst, const bf16* src, int64_t stride, int rows, int head_dim, bool vec) {
  constexpr int kChunks = D / 8;
  const bf16 zero = __float2bfloat16(0.0f);
  for (int i = threadIdx.x; i < kTile * kChunks; i += blockDim.x) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    bf16* out = dst + r * (D + kPad) + c;
    if (r >= rows) {
#pragma unroll
      for (int j = 0; j < 8; ++j) out[j] = zero;
      continue;
    }
    const bf16* in = src + r * stride + c;
    if (vec && c + 8 <= head_dim) {
      *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(in);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) out[j] = c + j < head_dim ? in[j] : zero;
    }
  }
}

// The K and V tiles of kv head `kvh` for keys k0 .. k0 + 63 of the sequence whose key rows start at
// `kv_base` (row pitch kv_stride).
template <int D>
__device__ inline void load_kv_tiles(bf16* k_tile, bf16* v_tile, const bf16* kv_base, const Geometry& g, int k0, int kvh) {
  const bf16* rows = kv_base + static_cast<int64_t>(k0) * g.kv_stride;
  const int count = min(kTile, g.keys - k0);
  load_tile<D>(k_tile, rows + g.k_col + static_cast<int64_t>(kvh) * g.head_dim, g.kv_stride, count, g.head_dim, g.vec_qkv);
  load_tile<D>(v_tile, rows + g.v_col + static_cast<int64_t>(kvh) * g.head_dim, g.kv_stride, count, g.head_dim, g.vec_qkv);
}

// The Q tile of query head h for queries q0 .. q0 + 63 of the sequence whose query rows start at
// `base` (row pitch stride).
template <int D>
__device__ inline void load_q_tile(bf16* q_tile, const bf16* base, const Geometry& g, int q0, int h) {
  load_tile<D>(q_tile, base + static_cast<int64_t>(q0) * g.stride + static_cast<int64_t>(h) * g.head_dim, g.stride,
               min(kTile, g.seq - q0), g.head_dim, g.vec_qkv);
}

// acc[n] += A (16 x K, row-major, lda) . B (K x N), 16-column block n. B row-major (ldb) or, with
// kBTransposed, stored as B^T (N x K) row-major. One warp; shared-memory operands.
template <int N, int K, bool kBTransposed>
__device__ inline void warp_mma(const bf16* a, int lda, const bf16* b, int ldb, Acc* acc) {
  using namespace nvcuda;
  using BLayout = std::conditional_t<kBTransposed, wmma::col_major, wmma::row_major>;
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + kk * 16, lda);
#pragma unroll
    for (int nn = 0; nn < N / 16; ++nn) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, BLayout> fb;
      wmma::load_matrix_sync(fb, kBTransposed ? b + nn * 16 * ldb + kk * 16 : b + kk * 16 * ldb + nn * 16, ldb);
      wmma::mma_sync(acc[nn], fa, fb, acc[nn]);
    }
  }
}

template <int N>
__device__ inline void zero_acc(Acc* acc) {
#pragma unroll
  for (int nn = 0; nn < N / 16; ++nn) nvcuda::wmma::fill_fragment(acc[nn], 0.0f);
}

template <int N>
__device__ inline void store_acc(const Acc* acc, float* c, int ldc) {
#pragma unroll
  for (int nn = 0; nn < N / 16; ++nn) nvcuda::wmma::store_matrix_sync(c + nn * 16, acc[nn], ldc, nvcuda::wmma::mem_row_major);
}

// out (16, 64) fp32, row pitch 64 = A (16 x D rows of a tile, pitch D + kPad) . B^T, B a whole
// (64, D) tile: the scores Q K^T of a warp's rows, or their transposes and dP-like products.
template <int D>
__device__ inline void warp_scores(const bf16* a_rows, const bf16* b_tile, float* out) {
  Acc s[kTile / 16];
  zero_acc<kTile>(s);
  warp_mma<kTile, D, true>(a_rows, D + kPad, b_tile, D + kPad, s);
  store_acc<kTile>(s, out, kTile);
}

// The last key a query tile starting at q0 sees, plus one: the key tiles a query tile walks
// (self-attention: up to the diagonal tile).
__device__ inline int keys_seen_by_tile(const Geometry& g, int q0) {
  const int last_query = min(q0 + kTile, g.seq) - 1;
  return min(g.keys, last_query + g.diagonal + 1);
}

// The first query tile whose queries see key k0 (self-attention: k0's own tile).
__device__ inline int first_query_tile_seeing(const Geometry& g, int k0) {
  return k0 > g.diagonal ? (k0 - g.diagonal) / kTile : 0;
}

// Whether the (query, key) pair is masked in the backward: the causal mask on the Geometry's
// diagonal, and padding. (The forward keeps padded query rows unmasked: see its online softmax.)
__device__ inline bool masked(const Geometry& g, int query, int key) {
  return key > query + g.diagonal || key >= g.keys || query >= g.seq;
}

// Checks the shape (DeviceError naming it) and derives the kernels' geometry for causal
// self-attention over qkv; dout may be null. Defined in attention_flash_forward.cu.
Geometry geometry(const AttentionShape& shape, const void* qkv, const void* dout);

// Launchers on a Geometry (attention_flash_forward.cu, attention_flash_backward.cu). q: the query
// rows of sequence 0 (row pitch stride), kv: its key rows (kv_stride, K at k_col, V at v_col).
// Forward: writes O to `out` (bf16) or, when out_fp32 is not null, to out_fp32 (fp32; both row
// pitch heads * head_dim), and the lse of each (batch, head, query) at lse[bh * q_rows + query].
void launch_forward(const bf16* q, const bf16* kv, bf16* out, float* out_fp32, float* lse, const Geometry& g, int64_t batch,
                    cudaStream_t stream);
// D[bh * q_rows + query] = rowsum(dO * O) of every query row, dO and O of pitch heads * head_dim.
void launch_row_dot(const bf16* dout, const bf16* out, float* drow, const Geometry& g, int64_t batch, cudaStream_t stream);
// dQ to dq (bf16, overwritten; pitch dq_stride) or dq_fp32 (accumulated), dK, dV to dkv (bf16,
// overwritten; the key rows' layout) or dkv_fp32 (accumulated). dq, dq_fp32, dkv, dkv_fp32 point
// at sequence 0's first row; the columns are the Geometry's.
struct Gradients {
  bf16* dq = nullptr;
  float* dq_fp32 = nullptr;
  bf16* dkv = nullptr;
  float* dkv_fp32 = nullptr;
};
void launch_backward(const bf16* dout, const bf16* q, const bf16* kv, const float* lse, const float* drow, const Gradients& grads,
                     const Geometry& g, int64_t batch, cudaStream_t stream);

// Kernels above 48 KiB of shared memory must say so (per device; cheap, so before every launch).
template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes, const char* name) {
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
             std::string("allowing ") + name + " " + std::to_string(bytes) + " bytes of shared memory");
}

}  // namespace trainsim::cuda::flash
