// Fused causal attention forward of kernels.cuh, FlashAttention-2 style, on TENSOR CORES through
// WMMA (bf16 16x16x16 tiles, fp32 accumulation); the softmax and the masks in fp32 on CUDA cores.
// A block takes 64 query rows of one (batch, head) in four warps of 16 rows, walks the 64-key
// tiles up to the diagonal (causal tile skipping), keeps the running max and sum per row (online
// softmax, base 2) and rescales its fp32 output held in shared memory; it stores the row
// log-sum-exp (natural log of sum exp(scale * q.k)) for the backward (attention_flash_backward.cu).
// Tiles load zero-padded (any seq; head_dim up to 128, computed as 64 or 128; see
// attention_flash_tiles.cuh). Simple, not tuned: no software pipelining, WMMA's opaque fragment
// layout costs shared-memory round trips. The same kernel runs ring attention's blocks (context
// parallelism: a Geometry with separate K, V rows and a diagonal offset; attention_ring_blocks.cu),
// writing the block's output in fp32 for the log-sum-exp merge.
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "kernels/cuda/attention_flash_tiles.cuh"
#include "kernels/cuda/device_math.cuh"

namespace trainsim::cuda {

namespace flash {

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
  g.keys = g.seq;  // self-attention: the keys are the queries' own sequence, K and V in qkv
  g.diagonal = 0;
  g.kv_stride = g.stride;
  g.k_col = shape.heads * shape.head_dim;
  g.v_col = (shape.heads + shape.kv_heads) * shape.head_dim;
  g.dq_stride = g.stride;
  g.q_rows = g.kv_rows = g.seq;
  g.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
  g.scale_log2 = g.scale * kLog2e;
  g.vec_qkv = shape.head_dim % 8 == 0 && aligned16(qkv);
  g.vec_dout = shape.head_dim % 8 == 0 && dout != nullptr && aligned16(dout);
  return g;
}

}  // namespace flash

namespace {

using namespace flash;

template <int D>
struct ForwardSmem {  // byte offsets; every part a multiple of 32 bytes (WMMA pointers)
  static constexpr size_t q = 0, k = tile_bytes<D>(), v = 2 * tile_bytes<D>(), warps = 3 * tile_bytes<D>();
  static constexpr size_t scratch_bytes = size_t{kWarpRows} * (D > kTile ? D : kTile) * 4;  // S (16, 64) or P V (16, D)
  static constexpr size_t p_bytes = size_t{kWarpRows} * kPLd * 2;                          // P (16, 64) bf16
  static constexpr size_t o_bytes = size_t{kWarpRows} * D * 4;                              // O (16, D) fp32
  static constexpr size_t warp_bytes = scratch_bytes + p_bytes + o_bytes + 2 * kWarpRows * 4;  // + alpha, l per row
  static constexpr size_t total = warps + kWarps * warp_bytes;
};

template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_forward_kernel(const bf16* q, const bf16* kv, bf16* out, float* out_fp32, float* lse, Geometry g) {
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

  const int qt = tiles_of(g.seq) - 1 - static_cast<int>(blockIdx.x);  // longest causal rows first
  const int bh = blockIdx.y, b = bh / g.heads, h = bh % g.heads, kvh = h / g.group;
  const int q0 = qt * kTile;
  const bf16* q_base = q + static_cast<int64_t>(b) * g.q_rows * g.stride;
  const bf16* kv_base = kv + static_cast<int64_t>(b) * g.kv_rows * g.kv_stride;
  load_q_tile<D>(q_tile, q_base, g, q0, h);
  for (int i = lane; i < kWarpRows * D; i += 32) o_acc[i] = 0.0f;

  const int my_row = lane / 2, half = lane % 2;  // lanes 2r and 2r+1 share row r, 32 keys each
  const int query = q0 + warp * kWarpRows + my_row;
  float m_run = -INFINITY, l_run = 0.0f;
  const int key_tiles = tiles_of(keys_seen_by_tile(g, q0));  // self-attention: up to the diagonal tile
  for (int kt = 0; kt < key_tiles; ++kt) {
    const int k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K and V tiles
    load_kv_tiles<D>(k_tile, v_tile, kv_base, g, k0, kvh);
    __syncthreads();

    warp_scores<D>(q_tile + warp * kWarpRows * kLd, k_tile, scratch);  // S (16, 64) = Q_w K^T
    __syncwarp();

    // Online softmax in base 2. Key 0 is valid for every row (padded ones too: they are not
    // masked here; the diagonal is never negative), so after the first tile the running max is
    // finite and masked keys give exp2(-inf) = 0.
    float* s_row = scratch + my_row * kTile + half * 32;
    float tile_max = -INFINITY;
    for (int j = 0; j < 32; ++j) {
      const int key = k0 + half * 32 + j;
      const float s = (key > query + g.diagonal || key >= g.keys) ? -INFINITY : s_row[j] * g.scale_log2;
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
    if (query < g.seq) lse[static_cast<int64_t>(bh) * g.q_rows + query] = (m_run + log2f(l_run)) * kLn2;
  }
  __syncwarp();
  const int64_t out_stride = static_cast<int64_t>(g.heads) * g.head_dim;
  for (int i = lane; i < kWarpRows * D; i += 32) {
    const int r = i / D, c = i % D, row = q0 + warp * kWarpRows + r;
    if (row < g.seq && c < g.head_dim) {
      const int64_t at = (static_cast<int64_t>(b) * g.q_rows + row) * out_stride + h * g.head_dim + c;
      if (out_fp32 != nullptr) {
        out_fp32[at] = o_acc[i] / l_row[r];
      } else {
        out[at] = __float2bfloat16(o_acc[i] / l_row[r]);
      }
    }
  }
}

template <int D>
void forward(const bf16* q, const bf16* kv, bf16* out, float* out_fp32, float* lse, const Geometry& g, int64_t batch_heads,
             cudaStream_t stream) {
  allow_shared(flash_forward_kernel<D>, ForwardSmem<D>::total, "flash_attention_forward");
  const dim3 grid(static_cast<unsigned>(tiles_of(g.seq)), static_cast<unsigned>(batch_heads));
  flash_forward_kernel<D><<<grid, kWarps * 32, ForwardSmem<D>::total, stream>>>(q, kv, out, out_fp32, lse, g);
  check_launch("flash_attention_forward");
}

}  // namespace

void flash::launch_forward(const bf16* q, const bf16* kv, bf16* out, float* out_fp32, float* lse, const Geometry& g, int64_t batch,
                           cudaStream_t stream) {
  const int64_t batch_heads = batch * g.heads;
  if (g.head_dim <= 64) {
    forward<64>(q, kv, out, out_fp32, lse, g, batch_heads, stream);
  } else {
    forward<128>(q, kv, out, out_fp32, lse, g, batch_heads, stream);
  }
}

void flash_attention_forward(const bf16* qkv, bf16* out, float* lse, const AttentionShape& shape, cudaStream_t stream) {
  const flash::Geometry g = flash::geometry(shape, qkv, nullptr);
  flash::launch_forward(qkv, qkv, out, nullptr, lse, g, shape.batch, stream);
}

}  // namespace trainsim::cuda
