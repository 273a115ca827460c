// Fused causal attention of kernels.cuh, FlashAttention-2 style, on TENSOR CORES through WMMA
// (bf16 16x16x16 tiles, fp32 accumulation); the softmax and the masks in fp32 on CUDA cores.
// Forward: a block takes 64 query rows of one (batch, head) in four warps of 16 rows, walks the
// 64-key tiles up to the diagonal (causal tile skipping), keeps the running max and sum per row
// (online softmax, base 2) and rescales its fp32 output held in shared memory; it stores the row
// log-sum-exp (natural log of sum exp(scale * q.k)). Backward, with P recomputed from lse and
// D = rowsum(dO * O): one kernel per 64-key tile of a kv head accumulates dK and dV over every
// query head of its GQA group (no atomics), one per 64-query tile accumulates dQ. Tiles load
// zero-padded (any seq; head_dim up to 128, computed as 64 or 128). Simple, not tuned: no
// software pipelining, WMMA's opaque fragment layout costs shared-memory round trips.
#include <mma.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "common/errors.hpp"
#include "runtime/cuda_kernels/cuda_check.cuh"
#include "runtime/cuda_kernels/device_math.cuh"
#include "runtime/cuda_kernels/kernels.cuh"

namespace trainsim::cuda {

namespace {

using namespace nvcuda;

constexpr int kTile = 64;       // query rows per block, keys per tile
constexpr int kWarps = 4;       // 16 rows (queries or keys) each
constexpr int kWarpRows = 16;
constexpr int kPad = 8;         // bf16 padding per shared row: fewer bank conflicts, rows stay 16-byte aligned
constexpr int kPLd = kTile + kPad;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Geometry {
  int seq = 0, heads = 0, kv_heads = 0, head_dim = 0, group = 1;
  int64_t stride = 0;       // qkv row length, (heads + 2 kv_heads) * head_dim
  float scale = 0.0f, scale_log2 = 0.0f;
  bool vec_qkv = false, vec_dout = false;  // 16-byte loads allowed
};

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// dst (64 x D, row pitch D + kPad) = rows [0, rows) x columns [0, head_dim) of src (row pitch
// `stride`), zeros elsewhere. The whole block takes part.
template <int D>
__device__ void load_tile(bf16* dst, const bf16* src, int64_t stride, int rows, int head_dim, bool vec) {
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

// acc[n] += A (16 x K, row-major, lda) . B (K x N), 16-column block n. B row-major (ldb) or, with
// kBTransposed, stored as B^T (N x K) row-major. One warp; shared-memory operands.
template <int N, int K, bool kBTransposed>
__device__ void warp_mma(const bf16* a, int lda, const bf16* b, int ldb, Acc* acc) {
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
__device__ void zero_acc(Acc* acc) {
#pragma unroll
  for (int nn = 0; nn < N / 16; ++nn) wmma::fill_fragment(acc[nn], 0.0f);
}

template <int N>
__device__ void store_acc(const Acc* acc, float* c, int ldc) {
#pragma unroll
  for (int nn = 0; nn < N / 16; ++nn) wmma::store_matrix_sync(c + nn * 16, acc[nn], ldc, wmma::mem_row_major);
}

// ---- forward ----

template <int D>
struct ForwardSmem {  // byte offsets; every part a multiple of 32 bytes (WMMA pointers)
  static constexpr size_t tile_bytes = size_t{kTile} * (D + kPad) * 2;
  static constexpr size_t q = 0, k = tile_bytes, v = 2 * tile_bytes, warps = 3 * tile_bytes;
  static constexpr size_t scratch_bytes = size_t{kWarpRows} * (D > kTile ? D : kTile) * 4;  // S (16, 64) or P V (16, D)
  static constexpr size_t p_bytes = size_t{kWarpRows} * kPLd * 2;                          // P (16, 64) bf16
  static constexpr size_t o_bytes = size_t{kWarpRows} * D * 4;                              // O (16, D) fp32
  static constexpr size_t warp_bytes = scratch_bytes + p_bytes + o_bytes + 2 * kWarpRows * 4;  // + alpha, l per row
  static constexpr size_t total = warps + kWarps * warp_bytes;
};

template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_forward_kernel(const bf16* qkv, bf16* out, float* lse, Geometry g) {
  using L = ForwardSmem<D>;
  constexpr int kLd = D + kPad;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* q_tile = reinterpret_cast<bf16*>(smem + L::q);
  bf16* k_tile = reinterpret_cast<bf16*>(smem + L::k);
  bf16* v_tile = reinterpret_cast<bf16*>(smem + L::v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned char* mine = smem + L::warps + warp * L::warp_bytes;
  float* scratch = reinterpret_cast<float*>(mine);
  bf16* p_tile = reinterpret_cast<bf16*>(mine + L::scratch_bytes);
  float* o_acc = reinterpret_cast<float*>(mine + L::scratch_bytes + L::p_bytes);
  float* alpha_row = reinterpret_cast<float*>(mine + L::scratch_bytes + L::p_bytes + L::o_bytes);
  float* l_row = alpha_row + kWarpRows;

  const int q_tiles = (g.seq + kTile - 1) / kTile;
  const int qt = q_tiles - 1 - static_cast<int>(blockIdx.x);  // longest causal rows first
  const int bh = blockIdx.y, b = bh / g.heads, h = bh % g.heads, kvh = h / g.group;
  const int q0 = qt * kTile;
  const bf16* base = qkv + static_cast<int64_t>(b) * g.seq * g.stride;
  load_tile<D>(q_tile, base + static_cast<int64_t>(q0) * g.stride + h * g.head_dim, g.stride, min(kTile, g.seq - q0),
               g.head_dim, g.vec_qkv);
  for (int i = lane; i < kWarpRows * D; i += 32) o_acc[i] = 0.0f;

  const int my_row = lane / 2, half = lane % 2;  // lanes 2r and 2r+1 share row r, 32 keys each
  const int query = q0 + warp * kWarpRows + my_row;
  float m_run = -INFINITY, l_run = 0.0f;
  for (int kt = 0; kt <= qt; ++kt) {
    const int k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K and V tiles
    const bf16* rows = base + static_cast<int64_t>(k0) * g.stride;
    load_tile<D>(k_tile, rows + static_cast<int64_t>(g.heads + kvh) * g.head_dim, g.stride, min(kTile, g.seq - k0),
                 g.head_dim, g.vec_qkv);
    load_tile<D>(v_tile, rows + static_cast<int64_t>(g.heads + g.kv_heads + kvh) * g.head_dim, g.stride,
                 min(kTile, g.seq - k0), g.head_dim, g.vec_qkv);
    __syncthreads();

    {  // S (16, 64) = Q_w K^T
      Acc s[kTile / 16];
      zero_acc<kTile>(s);
      warp_mma<kTile, D, true>(q_tile + warp * kWarpRows * kLd, kLd, k_tile, kLd, s);
      store_acc<kTile>(s, scratch, kTile);
    }
    __syncwarp();

    // Online softmax in base 2. Key 0 is valid for every row (padded ones too), so after the
    // first tile the running max is finite and masked keys give exp2(-inf) = 0.
    float* s_row = scratch + my_row * kTile + half * 32;
    float tile_max = -INFINITY;
    for (int j = 0; j < 32; ++j) {
      const int key = k0 + half * 32 + j;
      const float s = (key > query || key >= g.seq) ? -INFINITY : s_row[j] * g.scale_log2;
      s_row[j] = s;
      tile_max = fmaxf(tile_max, s);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m_run, tile_max);
    float tile_sum = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float p = exp2f(s_row[j] - m_new);
      p_tile[my_row * kPLd + half * 32 + j] = __float2bfloat16(p);
      tile_sum += p;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    const float alpha = exp2f(m_run - m_new);  // 0 on the first tile
    l_run = l_run * alpha + tile_sum;
    m_run = m_new;
    if (half == 0) alpha_row[my_row] = alpha;
    __syncwarp();

    {  // O = alpha O + P V
      Acc pv[D / 16];
      zero_acc<D>(pv);
      warp_mma<D, kTile, false>(p_tile, kPLd, v_tile, kLd, pv);
      store_acc<D>(pv, scratch, D);
    }
    __syncwarp();
    for (int i = lane; i < kWarpRows * D; i += 32) o_acc[i] = o_acc[i] * alpha_row[i / D] + scratch[i];
    __syncwarp();
  }
  if (half == 0) {
    l_row[my_row] = l_run;
    if (query < g.seq) lse[static_cast<int64_t>(bh) * g.seq + query] = (m_run + log2f(l_run)) * kLn2;
  }
  __syncwarp();
  const int64_t out_stride = static_cast<int64_t>(g.heads) * g.head_dim;
  for (int i = lane; i < kWarpRows * D; i += 32) {
    const int r = i / D, c = i % D, q = q0 + warp * kWarpRows + r;
    if (q < g.seq && c < g.head_dim) {
      out[(static_cast<int64_t>(b) * g.seq + q) * out_stride + h * g.head_dim + c] = __float2bfloat16(o_acc[i] / l_row[r]);
    }
  }
}

// ---- backward ----

// D[bh * seq + q] = sum_c dO * O over the head's columns; one warp per row.
__global__ void flash_backward_rowdot_kernel(const bf16* dout, const bf16* out, float* drow, Geometry g, int64_t rows) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const int64_t bh = row / g.seq, q = row % g.seq, b = bh / g.heads, h = bh % g.heads;
  const int64_t offset = (b * g.seq + q) * g.heads * g.head_dim + h * g.head_dim;
  float sum = 0.0f;
  for (int c = lane; c < g.head_dim; c += 32) sum += __bfloat162float(dout[offset + c]) * __bfloat162float(out[offset + c]);
  sum = warp_sum(sum);
  if (lane == 0) drow[row] = sum;
}

template <int D>
struct BackwardSmem {
  static constexpr size_t tile_bytes = size_t{kTile} * (D + kPad) * 2;
  static constexpr size_t q = 0, dout = tile_bytes, k = 2 * tile_bytes, v = 3 * tile_bytes;
  static constexpr size_t lse = 4 * tile_bytes, drow = lse + kTile * 4, warps = drow + kTile * 4;
  static constexpr size_t s_bytes = size_t{kWarpRows} * kTile * 4;  // S then P (16, 64) fp32; with dP: (16, D) at the end
  static constexpr size_t ds_bytes = size_t{kWarpRows} * kPLd * 2;   // P or dS (16, 64) bf16
  static constexpr size_t warp_bytes = 2 * s_bytes + ds_bytes;
  static constexpr size_t total = warps + kWarps * warp_bytes;
  static_assert(2 * s_bytes >= size_t{kWarpRows} * D * 4, "the final (16, D) store fits S and dP");
};

// The query tile's lse (as base 2) and D in shared memory; rows past seq get 0 (they are masked).
__device__ void load_row_stats(float* lse_s, float* drow_s, const float* lse, const float* drow, int64_t bh, int q0, int seq) {
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
    const int q = q0 + i;
    lse_s[i] = q < seq ? lse[bh * seq + q] * kLog2e : 0.0f;
    drow_s[i] = q < seq ? drow[bh * seq + q] : 0.0f;
  }
}

// dQ for 64 query rows of one (batch, head): loops over key tiles up to the diagonal.
template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_backward_dq_kernel(const bf16* dout, const bf16* qkv, const float* lse, const float* drow, bf16* dqkv, Geometry g) {
  using L = BackwardSmem<D>;
  constexpr int kLd = D + kPad;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* q_tile = reinterpret_cast<bf16*>(smem + L::q);
  bf16* do_tile = reinterpret_cast<bf16*>(smem + L::dout);
  bf16* k_tile = reinterpret_cast<bf16*>(smem + L::k);
  bf16* v_tile = reinterpret_cast<bf16*>(smem + L::v);
  float* lse_s = reinterpret_cast<float*>(smem + L::lse);
  float* drow_s = reinterpret_cast<float*>(smem + L::drow);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned char* mine = smem + L::warps + warp * L::warp_bytes;
  float* s_buf = reinterpret_cast<float*>(mine);
  float* dp_buf = reinterpret_cast<float*>(mine + L::s_bytes);
  bf16* ds_tile = reinterpret_cast<bf16*>(mine + 2 * L::s_bytes);

  const int q_tiles = (g.seq + kTile - 1) / kTile;
  const int qt = q_tiles - 1 - static_cast<int>(blockIdx.x);
  const int bh = blockIdx.y, b = bh / g.heads, h = bh % g.heads, kvh = h / g.group;
  const int q0 = qt * kTile, q_rows = min(kTile, g.seq - q0);
  const int64_t do_stride = static_cast<int64_t>(g.heads) * g.head_dim;
  const bf16* base = qkv + static_cast<int64_t>(b) * g.seq * g.stride;
  load_tile<D>(q_tile, base + static_cast<int64_t>(q0) * g.stride + h * g.head_dim, g.stride, q_rows, g.head_dim, g.vec_qkv);
  load_tile<D>(do_tile, dout + (static_cast<int64_t>(b) * g.seq + q0) * do_stride + h * g.head_dim, do_stride, q_rows,
               g.head_dim, g.vec_dout);
  load_row_stats(lse_s, drow_s, lse, drow, bh, q0, g.seq);

  Acc dq[D / 16];
  zero_acc<D>(dq);
  for (int kt = 0; kt <= qt; ++kt) {
    const int k0 = kt * kTile;
    __syncthreads();
    const bf16* rows = base + static_cast<int64_t>(k0) * g.stride;
    load_tile<D>(k_tile, rows + static_cast<int64_t>(g.heads + kvh) * g.head_dim, g.stride, min(kTile, g.seq - k0),
                 g.head_dim, g.vec_qkv);
    load_tile<D>(v_tile, rows + static_cast<int64_t>(g.heads + g.kv_heads + kvh) * g.head_dim, g.stride,
                 min(kTile, g.seq - k0), g.head_dim, g.vec_qkv);
    __syncthreads();
    {
      Acc s[kTile / 16];
      zero_acc<kTile>(s);
      warp_mma<kTile, D, true>(q_tile + warp * kWarpRows * kLd, kLd, k_tile, kLd, s);  // S = Q_w K^T
      store_acc<kTile>(s, s_buf, kTile);
      zero_acc<kTile>(s);
      warp_mma<kTile, D, true>(do_tile + warp * kWarpRows * kLd, kLd, v_tile, kLd, s);  // dP = dO_w V^T
      store_acc<kTile>(s, dp_buf, kTile);
    }
    __syncwarp();
    for (int i = lane; i < kWarpRows * kTile; i += 32) {
      const int r = i / kTile, c = i % kTile, row = warp * kWarpRows + r;
      const int query = q0 + row, key = k0 + c;
      const bool masked = key > query || key >= g.seq || query >= g.seq;
      const float p = masked ? 0.0f : exp2f(s_buf[i] * g.scale_log2 - lse_s[row]);
      ds_tile[r * kPLd + c] = __float2bfloat16(p * (dp_buf[i] - drow_s[row]) * g.scale);
    }
    __syncwarp();
    warp_mma<D, kTile, false>(ds_tile, kPLd, k_tile, kLd, dq);  // dQ += dS K
  }
  __syncwarp();
  store_acc<D>(dq, s_buf, D);
  __syncwarp();
  for (int i = lane; i < kWarpRows * D; i += 32) {
    const int r = i / D, c = i % D, q = q0 + warp * kWarpRows + r;
    if (q < g.seq && c < g.head_dim) {
      dqkv[(static_cast<int64_t>(b) * g.seq + q) * g.stride + h * g.head_dim + c] = __float2bfloat16(s_buf[i]);
    }
  }
}

// Writes rows of a (16, D) fp32 block (in `buffer`) to dqkv at column `col0`, keys from key0.
template <int D>
__device__ void write_key_rows(const float* buffer, bf16* dqkv, const Geometry& g, int64_t b, int key0, int64_t col0) {
  const int lane = threadIdx.x % 32;
  for (int i = lane; i < kWarpRows * D; i += 32) {
    const int r = i / D, c = i % D, key = key0 + r;
    if (key < g.seq && c < g.head_dim) dqkv[(b * g.seq + key) * g.stride + col0 + c] = __float2bfloat16(buffer[i]);
  }
}

// dK, dV for 64 keys of one (batch, kv head): loops over the query heads of its group and the
// query tiles from the diagonal on. Warp w owns keys 16w .. 16w + 15 of the tile.
template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_backward_dkv_kernel(const bf16* dout, const bf16* qkv, const float* lse, const float* drow, bf16* dqkv, Geometry g) {
  using L = BackwardSmem<D>;
  constexpr int kLd = D + kPad;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* q_tile = reinterpret_cast<bf16*>(smem + L::q);
  bf16* do_tile = reinterpret_cast<bf16*>(smem + L::dout);
  bf16* k_tile = reinterpret_cast<bf16*>(smem + L::k);
  bf16* v_tile = reinterpret_cast<bf16*>(smem + L::v);
  float* lse_s = reinterpret_cast<float*>(smem + L::lse);
  float* drow_s = reinterpret_cast<float*>(smem + L::drow);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned char* mine = smem + L::warps + warp * L::warp_bytes;
  float* s_buf = reinterpret_cast<float*>(mine);
  float* dp_buf = reinterpret_cast<float*>(mine + L::s_bytes);
  bf16* pt_tile = reinterpret_cast<bf16*>(mine + 2 * L::s_bytes);

  const int q_tiles = (g.seq + kTile - 1) / kTile;
  const int kt = blockIdx.x;  // the first key tiles have the most query tiles: launched first
  const int b = blockIdx.y / g.kv_heads, kvh = blockIdx.y % g.kv_heads;
  const int k0 = kt * kTile, k_rows = min(kTile, g.seq - k0);
  const int64_t do_stride = static_cast<int64_t>(g.heads) * g.head_dim;
  const int64_t k_col = static_cast<int64_t>(g.heads + kvh) * g.head_dim;
  const int64_t v_col = static_cast<int64_t>(g.heads + g.kv_heads + kvh) * g.head_dim;
  const bf16* base = qkv + static_cast<int64_t>(b) * g.seq * g.stride;
  load_tile<D>(k_tile, base + static_cast<int64_t>(k0) * g.stride + k_col, g.stride, k_rows, g.head_dim, g.vec_qkv);
  load_tile<D>(v_tile, base + static_cast<int64_t>(k0) * g.stride + v_col, g.stride, k_rows, g.head_dim, g.vec_qkv);

  Acc dk[D / 16], dv[D / 16];
  zero_acc<D>(dk);
  zero_acc<D>(dv);
  for (int member = 0; member < g.group; ++member) {
    const int h = kvh * g.group + member;
    const int64_t bh = static_cast<int64_t>(b) * g.heads + h;
    for (int qt = kt; qt < q_tiles; ++qt) {
      const int q0 = qt * kTile, q_rows = min(kTile, g.seq - q0);
      __syncthreads();  // every warp is done with the previous Q, dO and row statistics
      load_tile<D>(q_tile, base + static_cast<int64_t>(q0) * g.stride + h * g.head_dim, g.stride, q_rows, g.head_dim,
                   g.vec_qkv);
      load_tile<D>(do_tile, dout + (static_cast<int64_t>(b) * g.seq + q0) * do_stride + h * g.head_dim, do_stride, q_rows,
                   g.head_dim, g.vec_dout);
      load_row_stats(lse_s, drow_s, lse, drow, bh, q0, g.seq);
      __syncthreads();
      {  // S^T (16 keys, 64 queries) = K_w Q^T
        Acc s[kTile / 16];
        zero_acc<kTile>(s);
        warp_mma<kTile, D, true>(k_tile + warp * kWarpRows * kLd, kLd, q_tile, kLd, s);
        store_acc<kTile>(s, s_buf, kTile);
      }
      __syncwarp();
      for (int i = lane; i < kWarpRows * kTile; i += 32) {  // P^T, fp32 in s_buf and bf16 for the MMA
        const int r = i / kTile, c = i % kTile;
        const int key = k0 + warp * kWarpRows + r, query = q0 + c;
        const bool masked = key > query || key >= g.seq || query >= g.seq;
        const float p = masked ? 0.0f : exp2f(s_buf[i] * g.scale_log2 - lse_s[c]);
        s_buf[i] = p;
        pt_tile[r * kPLd + c] = __float2bfloat16(p);
      }
      __syncwarp();
      warp_mma<D, kTile, false>(pt_tile, kPLd, do_tile, kLd, dv);  // dV += P^T dO
      {  // dP^T (16 keys, 64 queries) = V_w dO^T
        Acc dp[kTile / 16];
        zero_acc<kTile>(dp);
        warp_mma<kTile, D, true>(v_tile + warp * kWarpRows * kLd, kLd, do_tile, kLd, dp);
        store_acc<kTile>(dp, dp_buf, kTile);
      }
      __syncwarp();  // also: every lane is past the dV MMA's reads of pt_tile
      for (int i = lane; i < kWarpRows * kTile; i += 32) {  // dS^T = P^T (dP^T - D) * scale
        const int r = i / kTile, c = i % kTile;
        pt_tile[r * kPLd + c] = __float2bfloat16(s_buf[i] * (dp_buf[i] - drow_s[c]) * g.scale);
      }
      __syncwarp();
      warp_mma<D, kTile, false>(pt_tile, kPLd, q_tile, kLd, dk);  // dK += dS^T Q
    }
  }
  __syncwarp();
  const int key0 = k0 + warp * kWarpRows;
  store_acc<D>(dk, s_buf, D);
  __syncwarp();
  write_key_rows<D>(s_buf, dqkv, g, b, key0, k_col);
  __syncwarp();
  store_acc<D>(dv, s_buf, D);
  __syncwarp();
  write_key_rows<D>(s_buf, dqkv, g, b, key0, v_col);
}

Geometry geometry(const AttentionShape& shape, const void* qkv, const void* dout) {
  if (shape.batch <= 0 || shape.seq <= 0 || shape.heads <= 0 || shape.kv_heads <= 0 || shape.head_dim <= 0 ||
      shape.heads % shape.kv_heads != 0) {
    throw DeviceError("flash attention: bad shape (batch " + std::to_string(shape.batch) + ", seq " +
                      std::to_string(shape.seq) + ", heads " + std::to_string(shape.heads) + ", kv_heads " +
                      std::to_string(shape.kv_heads) + ", head_dim " + std::to_string(shape.head_dim) +
                      "): all must be positive and kv_heads must divide heads");
  }
  if (shape.head_dim > 128) {
    throw DeviceError("flash attention takes head_dim up to 128, not " + std::to_string(shape.head_dim) +
                      "\nHINT: use the unfused attention for larger heads");
  }
  if (shape.batch * shape.heads > 65535 || shape.seq > (int64_t{1} << 30)) {
    throw DeviceError("flash attention: batch * heads (" + std::to_string(shape.batch * shape.heads) +
                      ") must be at most 65535 and seq at most 2^30");
  }
  Geometry g;
  g.seq = static_cast<int>(shape.seq);
  g.heads = static_cast<int>(shape.heads);
  g.kv_heads = static_cast<int>(shape.kv_heads);
  g.head_dim = static_cast<int>(shape.head_dim);
  g.group = g.heads / g.kv_heads;
  g.stride = (shape.heads + 2 * shape.kv_heads) * shape.head_dim;
  g.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
  g.scale_log2 = g.scale * kLog2e;
  g.vec_qkv = shape.head_dim % 8 == 0 && aligned16(qkv);
  g.vec_dout = shape.head_dim % 8 == 0 && dout != nullptr && aligned16(dout);
  return g;
}

// Kernels above 48 KiB of shared memory must say so (per device; cheap, so before every launch).
template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes, const char* name) {
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
             std::string("allowing ") + name + " " + std::to_string(bytes) + " bytes of shared memory");
}

template <int D>
void forward(const bf16* qkv, bf16* out, float* lse, const Geometry& g, int64_t batch_heads, cudaStream_t stream) {
  allow_shared(flash_forward_kernel<D>, ForwardSmem<D>::total, "flash_attention_forward");
  const dim3 grid(static_cast<unsigned>((g.seq + kTile - 1) / kTile), static_cast<unsigned>(batch_heads));
  flash_forward_kernel<D><<<grid, kWarps * 32, ForwardSmem<D>::total, stream>>>(qkv, out, lse, g);
  check_launch("flash_attention_forward");
}

template <int D>
void backward(const bf16* dout, const bf16* qkv, const float* lse, const float* drow, bf16* dqkv, const Geometry& g,
              int64_t batch, cudaStream_t stream) {
  const unsigned tiles = static_cast<unsigned>((g.seq + kTile - 1) / kTile);
  allow_shared(flash_backward_dkv_kernel<D>, BackwardSmem<D>::total, "flash_attention_backward (dK, dV)");
  flash_backward_dkv_kernel<D><<<dim3(tiles, static_cast<unsigned>(batch * g.kv_heads)), kWarps * 32,
                                 BackwardSmem<D>::total, stream>>>(dout, qkv, lse, drow, dqkv, g);
  check_launch("flash_attention_backward (dK, dV)");
  allow_shared(flash_backward_dq_kernel<D>, BackwardSmem<D>::total, "flash_attention_backward (dQ)");
  flash_backward_dq_kernel<D><<<dim3(tiles, static_cast<unsigned>(batch * g.heads)), kWarps * 32, BackwardSmem<D>::total,
                                stream>>>(dout, qkv, lse, drow, dqkv, g);
  check_launch("flash_attention_backward (dQ)");
}

}  // namespace

void flash_attention_forward(const bf16* qkv, bf16* out, float* lse, const AttentionShape& shape, cudaStream_t stream) {
  const Geometry g = geometry(shape, qkv, nullptr);
  if (shape.head_dim <= 64) {
    forward<64>(qkv, out, lse, g, shape.batch * shape.heads, stream);
  } else {
    forward<128>(qkv, out, lse, g, shape.batch * shape.heads, stream);
  }
}

size_t flash_attention_backward_scratch_bytes(const AttentionShape& shape) {
  return static_cast<size_t>(shape.batch * shape.heads * shape.seq) * sizeof(float);  // D = rowsum(dO * O)
}

void flash_attention_backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, bf16* dqkv,
                              void* scratch, const AttentionShape& shape, cudaStream_t stream) {
  const Geometry g = geometry(shape, qkv, dout);
  float* drow = static_cast<float*>(scratch);
  const int64_t rows = shape.batch * shape.heads * shape.seq;
  flash_backward_rowdot_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(dout, out, drow, g, rows);
  check_launch("flash_attention_backward (D = rowsum(dO * O))");
  if (shape.head_dim <= 64) {
    backward<64>(dout, qkv, lse, drow, dqkv, g, shape.batch, stream);
  } else {
    backward<128>(dout, qkv, lse, drow, dqkv, g, shape.batch, stream);
  }
}

}  // namespace trainsim::cuda
