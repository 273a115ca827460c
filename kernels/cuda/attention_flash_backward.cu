// Fused causal attention backward of kernels.cuh (FlashAttention-2 style, WMMA tensor cores, see
// attention_flash_tiles.cuh), with P recomputed from the forward's lse and D = rowsum(dO * O):
// one kernel per 64-key tile of a kv head accumulates dK and dV over every query head of its GQA
// group and the query tiles from the diagonal on (no atomics); one per 64-query tile of a head
// accumulates dQ over the key tiles up to the diagonal. Both write their part of dqkv (same
// layout as qkv); padded rows and columns are masked or never written. For ring attention's blocks
// (context parallelism; attention_ring_blocks.cu) the same kernels read a Geometry with separate K,
// V rows and a diagonal offset, and add dQ, dK, dV into fp32 accumulators instead.
#include <string>

#include "kernels/cuda/attention_flash_tiles.cuh"
#include "kernels/cuda/device_math.cuh"

namespace trainsim::cuda {

namespace {

using namespace flash;

// D[bh * q_rows + q] = sum_c dO * O over the head's columns, for q < seq; one warp per row.
__global__ void flash_backward_rowdot_kernel(const bf16* dout, const bf16* out, float* drow, Geometry g, int64_t rows) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const int64_t bh = row / g.seq, q = row % g.seq, b = bh / g.heads, h = bh % g.heads;
  const int64_t offset = (b * g.q_rows + q) * g.heads * g.head_dim + h * g.head_dim;
  float sum = 0.0f;
  for (int c = lane; c < g.head_dim; c += 32) sum += __bfloat162float(dout[offset + c]) * __bfloat162float(out[offset + c]);
  sum = warp_sum(sum);
  if (lane == 0) drow[bh * g.q_rows + q] = sum;
}

template <int D>
struct BackwardSmem {  // byte offsets; every part a multiple of 32 bytes (WMMA pointers)
  static constexpr size_t q = 0, dout = tile_bytes<D>(), k = 2 * tile_bytes<D>(), v = 3 * tile_bytes<D>();
  static constexpr size_t lse = 4 * tile_bytes<D>(), drow = lse + kTile * 4, warps = drow + kTile * 4;
  static constexpr size_t s_bytes = size_t{kWarpRows} * kTile * 4;  // S then P (16, 64) fp32; with dP: (16, D) at the end
  static constexpr size_t ds_bytes = size_t{kWarpRows} * kPLd * 2;   // P or dS (16, 64) bf16
  static constexpr size_t warp_bytes = 2 * s_bytes + ds_bytes;
  static constexpr size_t total = warps + kWarps * warp_bytes;
  static_assert(2 * s_bytes >= size_t{kWarpRows} * D * 4, "the final (16, D) store fits S and dP");
};

// A block's shared memory as BackwardSmem<D> lays it out; s, dp and ds are the calling warp's own.
template <int D>
struct BackwardTiles {
  bf16 *q, *dout, *k, *v, *ds;
  float *lse, *drow, *s, *dp;

  __device__ explicit BackwardTiles(unsigned char* smem) {
    using L = BackwardSmem<D>;
    q = reinterpret_cast<bf16*>(smem + L::q);
    dout = reinterpret_cast<bf16*>(smem + L::dout);
    k = reinterpret_cast<bf16*>(smem + L::k);
    v = reinterpret_cast<bf16*>(smem + L::v);
    lse = reinterpret_cast<float*>(smem + L::lse);
    drow = reinterpret_cast<float*>(smem + L::drow);
    unsigned char* mine = smem + L::warps + (threadIdx.x / 32) * L::warp_bytes;
    s = reinterpret_cast<float*>(mine);
    dp = reinterpret_cast<float*>(mine + L::s_bytes);
    ds = reinterpret_cast<bf16*>(mine + 2 * L::s_bytes);
  }
};

// The query side of head h, queries q0 .. q0 + 63 of the sequence whose query rows start at
// `q_base`: Q and dO tiles, the lse (as base 2) and D of each row; rows past seq get zeros (they
// are masked). The whole block takes part.
template <int D>
__device__ void load_query_side(const BackwardTiles<D>& t, const bf16* q_base, const bf16* dout, const float* lse,
                                const float* drow, const Geometry& g, int b, int h, int q0) {
  load_q_tile<D>(t.q, q_base, g, q0, h);
  const int64_t do_stride = static_cast<int64_t>(g.heads) * g.head_dim;
  load_tile<D>(t.dout, dout + (static_cast<int64_t>(b) * g.q_rows + q0) * do_stride + static_cast<int64_t>(h) * g.head_dim,
               do_stride, min(kTile, g.seq - q0), g.head_dim, g.vec_dout);
  const int64_t bh = static_cast<int64_t>(b) * g.heads + h;
  for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
    const int q = q0 + i;
    t.lse[i] = q < g.seq ? lse[bh * g.q_rows + q] * kLog2e : 0.0f;
    t.drow[i] = q < g.seq ? drow[bh * g.q_rows + q] : 0.0f;
  }
}

// Writes a warp's (16, D) fp32 accumulators to rows row0 .. row0 + 15 (those below `limit`) of a
// gradient whose row 0 starts at `at` (bf16, overwritten) or `at_fp32` (fp32, accumulated: ring
// attention adds each block's share), row pitch `stride`, through `buffer` (16 x D floats of the
// warp's own shared memory).
template <int D>
__device__ void write_rows(const Acc* acc, float* buffer, bf16* at, float* at_fp32, int64_t stride, int row0, int limit,
                           int head_dim) {
  __syncwarp();  // every lane is done with what `buffer` held
  store_acc<D>(acc, buffer, D);
  __syncwarp();
  for (int i = threadIdx.x % 32; i < kWarpRows * D; i += 32) {
    const int r = i / D, c = i % D, row = row0 + r;
    if (row < limit && c < head_dim) {
      const int64_t offset = static_cast<int64_t>(row) * stride + c;
      if (at_fp32 != nullptr) {
        at_fp32[offset] += buffer[i];
      } else {
        at[offset] = __float2bfloat16(buffer[i]);
      }
    }
  }
}

// Where write_rows puts a head's columns of batch entry b: `column` of the gradient's rows.
struct Target {
  bf16* at;
  float* at_fp32;
};
__device__ inline Target target_of(bf16* rows, float* rows_fp32, int64_t first_row, int64_t stride, int64_t column) {
  const int64_t offset = first_row * stride + column;
  return {rows != nullptr ? rows + offset : nullptr, rows_fp32 != nullptr ? rows_fp32 + offset : nullptr};
}

// dQ for 64 query rows of one (batch, head): loops over the key tiles they see (self-attention: up
// to the diagonal).
template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_backward_dq_kernel(const bf16* dout, const bf16* q, const bf16* kv, const float* lse, const float* drow, Gradients grads,
                             Geometry g) {
  constexpr int kLd = D + kPad;
  extern __shared__ __align__(128) unsigned char smem[];
  const BackwardTiles<D> t(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const int qt = tiles_of(g.seq) - 1 - static_cast<int>(blockIdx.x);  // longest causal rows first
  const int bh = blockIdx.y, b = bh / g.heads, h = bh % g.heads, kvh = h / g.group;
  const int q0 = qt * kTile;
  const bf16* q_base = q + static_cast<int64_t>(b) * g.q_rows * g.stride;
  const bf16* kv_base = kv + static_cast<int64_t>(b) * g.kv_rows * g.kv_stride;
  load_query_side<D>(t, q_base, dout, lse, drow, g, b, h, q0);  // read after the loop's first barrier

  Acc dq[D / 16];
  zero_acc<D>(dq);
  const int key_tiles = tiles_of(keys_seen_by_tile(g, q0));
  for (int kt = 0; kt < key_tiles; ++kt) {
    const int k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K and V tiles
    load_kv_tiles<D>(t.k, t.v, kv_base, g, k0, kvh);
    __syncthreads();
    warp_scores<D>(t.q + warp * kWarpRows * kLd, t.k, t.s);      // S = Q_w K^T
    warp_scores<D>(t.dout + warp * kWarpRows * kLd, t.v, t.dp);  // dP = dO_w V^T
    __syncwarp();
    for (int i = lane; i < kWarpRows * kTile; i += 32) {  // dS = P (dP - D) * scale
      const int r = i / kTile, c = i % kTile, row = warp * kWarpRows + r;
      const float p = masked(g, q0 + row, k0 + c) ? 0.0f : exp2f(t.s[i] * g.scale_log2 - t.lse[row]);
      t.ds[r * kPLd + c] = __float2bfloat16(p * (t.dp[i] - t.drow[row]) * g.scale);
    }
    __syncwarp();
    warp_mma<D, kTile, false>(t.ds, kPLd, t.k, kLd, dq);  // dQ += dS K
  }
  const Target dq_at = target_of(grads.dq, grads.dq_fp32, static_cast<int64_t>(b) * g.q_rows, g.dq_stride,
                                 static_cast<int64_t>(h) * g.head_dim);
  write_rows<D>(dq, t.s, dq_at.at, dq_at.at_fp32, g.dq_stride, q0 + warp * kWarpRows, g.seq, g.head_dim);
}

// dK, dV for 64 keys of one (batch, kv head): loops over the query heads of its group and the
// query tiles that see them (self-attention: from the diagonal on). Warp w owns keys 16w .. 16w + 15
// of the tile.
template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_backward_dkv_kernel(const bf16* dout, const bf16* q, const bf16* kv, const float* lse, const float* drow,
                              Gradients grads, Geometry g) {
  constexpr int kLd = D + kPad;
  extern __shared__ __align__(128) unsigned char smem[];
  const BackwardTiles<D> t(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const int q_tiles = tiles_of(g.seq);
  const int kt = blockIdx.x;  // the first key tiles have the most query tiles: launched first
  const int b = blockIdx.y / g.kv_heads, kvh = blockIdx.y % g.kv_heads;
  const int k0 = kt * kTile;
  const bf16* q_base = q + static_cast<int64_t>(b) * g.q_rows * g.stride;
  const bf16* kv_base = kv + static_cast<int64_t>(b) * g.kv_rows * g.kv_stride;
  load_kv_tiles<D>(t.k, t.v, kv_base, g, k0, kvh);  // read after the loop's first barrier

  Acc dk[D / 16], dv[D / 16];
  zero_acc<D>(dk);
  zero_acc<D>(dv);
  for (int member = 0; member < g.group; ++member) {
    const int h = kvh * g.group + member;
    for (int qt = first_query_tile_seeing(g, k0); qt < q_tiles; ++qt) {
      const int q0 = qt * kTile;
      __syncthreads();  // every warp is done with the previous Q, dO and row statistics
      load_query_side<D>(t, q_base, dout, lse, drow, g, b, h, q0);
      __syncthreads();
      warp_scores<D>(t.k + warp * kWarpRows * kLd, t.q, t.s);  // S^T (16 keys, 64 queries) = K_w Q^T
      __syncwarp();
      for (int i = lane; i < kWarpRows * kTile; i += 32) {  // P^T, fp32 in s and bf16 for the MMA
        const int r = i / kTile, c = i % kTile;
        const float p = masked(g, q0 + c, k0 + warp * kWarpRows + r) ? 0.0f : exp2f(t.s[i] * g.scale_log2 - t.lse[c]);
        t.s[i] = p;
        t.ds[r * kPLd + c] = __float2bfloat16(p);
      }
      __syncwarp();
      warp_mma<D, kTile, false>(t.ds, kPLd, t.dout, kLd, dv);       // dV += P^T dO
      warp_scores<D>(t.v + warp * kWarpRows * kLd, t.dout, t.dp);  // dP^T (16 keys, 64 queries) = V_w dO^T
      __syncwarp();  // also: every lane is past the dV MMA's reads of ds
      for (int i = lane; i < kWarpRows * kTile; i += 32) {  // dS^T = P^T (dP^T - D) * scale
        const int r = i / kTile, c = i % kTile;
        t.ds[r * kPLd + c] = __float2bfloat16(t.s[i] * (t.dp[i] - t.drow[c]) * g.scale);
      }
      __syncwarp();
      warp_mma<D, kTile, false>(t.ds, kPLd, t.q, kLd, dk);  // dK += dS^T Q
    }
  }
  const int key0 = k0 + warp * kWarpRows;
  const int64_t first_row = static_cast<int64_t>(b) * g.kv_rows, head_col = static_cast<int64_t>(kvh) * g.head_dim;
  const Target dk_at = target_of(grads.dkv, grads.dkv_fp32, first_row, g.kv_stride, g.k_col + head_col);
  const Target dv_at = target_of(grads.dkv, grads.dkv_fp32, first_row, g.kv_stride, g.v_col + head_col);
  write_rows<D>(dk, t.s, dk_at.at, dk_at.at_fp32, g.kv_stride, key0, g.keys, g.head_dim);
  write_rows<D>(dv, t.s, dv_at.at, dv_at.at_fp32, g.kv_stride, key0, g.keys, g.head_dim);
}

template <int D>
void backward(const bf16* dout, const bf16* q, const bf16* kv, const float* lse, const float* drow, const Gradients& grads,
              const Geometry& g, int64_t batch, cudaStream_t stream) {
  allow_shared(flash_backward_dkv_kernel<D>, BackwardSmem<D>::total, "flash_attention_backward (dK, dV)");
  flash_backward_dkv_kernel<D><<<dim3(static_cast<unsigned>(tiles_of(g.keys)), static_cast<unsigned>(batch * g.kv_heads)), kWarps * 32,
                                 BackwardSmem<D>::total, stream>>>(dout, q, kv, lse, drow, grads, g);
  check_launch("flash_attention_backward (dK, dV)");
  allow_shared(flash_backward_dq_kernel<D>, BackwardSmem<D>::total, "flash_attention_backward (dQ)");
  flash_backward_dq_kernel<D><<<dim3(static_cast<unsigned>(tiles_of(g.seq)), static_cast<unsigned>(batch * g.heads)), kWarps * 32,
                                BackwardSmem<D>::total, stream>>>(dout, q, kv, lse, drow, grads, g);
  check_launch("flash_attention_backward (dQ)");
}

}  // namespace

size_t flash_attention_backward_scratch_bytes(const AttentionShape& shape) {
  return static_cast<size_t>(shape.batch * shape.heads * shape.seq) * sizeof(float);  // D = rowsum(dO * O)
}

void flash::launch_row_dot(const bf16* dout, const bf16* out, float* drow, const Geometry& g, int64_t batch, cudaStream_t stream) {
  const int64_t rows = batch * g.heads * g.seq;
  flash_backward_rowdot_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(dout, out, drow, g, rows);
  check_launch("flash_attention_backward (D = rowsum(dO * O))");
}

void flash::launch_backward(const bf16* dout, const bf16* q, const bf16* kv, const float* lse, const float* drow, const Gradients& grads,
                            const Geometry& g, int64_t batch, cudaStream_t stream) {
  if (g.head_dim <= 64) {
    backward<64>(dout, q, kv, lse, drow, grads, g, batch, stream);
  } else {
    backward<128>(dout, q, kv, lse, drow, grads, g, batch, stream);
  }
}

void flash_attention_backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, bf16* dqkv,
                              void* scratch, const AttentionShape& shape, cudaStream_t stream) {
  const flash::Geometry g = flash::geometry(shape, qkv, dout);
  float* drow = static_cast<float*>(scratch);
  flash::launch_row_dot(dout, out, drow, g, shape.batch, stream);
  flash::Gradients grads;
  grads.dq = dqkv;  // Q's columns of dqkv, written by the dQ kernel; K's and V's by the dK, dV kernel
  grads.dkv = dqkv;
  flash::launch_backward(dout, qkv, qkv, lse, drow, grads, g, shape.batch, stream);
}

}  // namespace trainsim::cuda
