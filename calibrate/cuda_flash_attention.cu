// trainsim-flash-v1 and the naive reference (see cuda_flash_attention.cuh). A block takes 64 query
// rows of one (batch, head), four warps of 16 rows; it walks 64-key tiles of K and V (staged in
// shared memory), computes S = Q K^T and then P V with WMMA bf16 tensor-core tiles, and keeps the
// running max and sum per row (two lanes per row) to rescale the fp32 output held in shared
// memory. Causal blocks skip key tiles after their last query. Simple, not tuned.
#include "calibrate/cuda_flash_attention.cuh"

#include <mma.h>

#include <cmath>

#include "calibrate/cuda_block_reduce.cuh"
#include "calibrate/cuda_context.cuh"
#include "common/errors.hpp"

namespace trainsim {

namespace {

using namespace nvcuda;

constexpr int kTile = 64;        // query rows per block, keys per tile
constexpr int kWarps = 4;        // 16 query rows each
constexpr int kWarpRows = 16;
constexpr int kReferenceThreads = 128;

// Dynamic shared memory of one block, in bytes from the (128-byte aligned) start.
template <int D>
struct FlashLayout {
  static constexpr int kScratchCols = D > kTile ? D : kTile;
  static constexpr size_t k_offset = 0;                                     // K tile (kTile, D) bf16
  static constexpr size_t v_offset = k_offset + kTile * D * 2;              // V tile (kTile, D) bf16
  static constexpr size_t warp_offset = v_offset + kTile * D * 2;
  static constexpr size_t scratch_bytes = kWarpRows * kScratchCols * 4;     // S (16, 64) or P V (16, D) fp32
  static constexpr size_t p_bytes = kWarpRows * kTile * 2;                  // P (16, 64) bf16
  static constexpr size_t o_bytes = kWarpRows * D * 4;                      // O (16, D) fp32
  static constexpr size_t warp_bytes = scratch_bytes + p_bytes + o_bytes + 2 * kWarpRows * 4;  // + alpha, l
  static constexpr size_t total = warp_offset + kWarps * warp_bytes;
};

template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_forward_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                         int seq, float scale_log2, bool causal) {
  using L = FlashLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  __nv_bfloat16* k_tile = reinterpret_cast<__nv_bfloat16*>(smem + L::k_offset);
  __nv_bfloat16* v_tile = reinterpret_cast<__nv_bfloat16*>(smem + L::v_offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned char* mine = smem + L::warp_offset + warp * L::warp_bytes;
  float* scratch = reinterpret_cast<float*>(mine);
  __nv_bfloat16* p_tile = reinterpret_cast<__nv_bfloat16*>(mine + L::scratch_bytes);
  float* o_acc = reinterpret_cast<float*>(mine + L::scratch_bytes + L::p_bytes);
  float* alpha_row = reinterpret_cast<float*>(mine + L::scratch_bytes + L::p_bytes + L::o_bytes);
  float* l_row = alpha_row + kWarpRows;

  const int tiles = seq / kTile;
  const int q_tile = tiles - 1 - static_cast<int>(blockIdx.x);  // longest causal rows first
  const size_t head = static_cast<size_t>(blockIdx.y) * seq * D;
  const int row0 = q_tile * kTile + warp * kWarpRows;  // this warp's first query

  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> q_frag[D / 16];
#pragma unroll
  for (int c = 0; c < D / 16; ++c) wmma::load_matrix_sync(q_frag[c], q + head + static_cast<size_t>(row0) * D + c * 16, D);
  for (int i = lane; i < kWarpRows * D; i += 32) o_acc[i] = 0.0f;

  const int my_row = lane / 2, half = lane % 2;  // lanes 2r and 2r+1 share row r, 32 columns each
  const int query = row0 + my_row;
  float m_run = -INFINITY, l_run = 0.0f;
  const int key_tiles = causal ? q_tile + 1 : tiles;
  for (int kt = 0; kt < key_tiles; ++kt) {
    __syncthreads();  // all warps are done with the previous tiles
    const uint4* k_src = reinterpret_cast<const uint4*>(k + head + static_cast<size_t>(kt) * kTile * D);
    const uint4* v_src = reinterpret_cast<const uint4*>(v + head + static_cast<size_t>(kt) * kTile * D);
    for (int i = threadIdx.x; i < kTile * D / 8; i += blockDim.x) {
      reinterpret_cast<uint4*>(k_tile)[i] = k_src[i];
      reinterpret_cast<uint4*>(v_tile)[i] = v_src[i];
    }
    __syncthreads();

    // S (16, 64) = Q (16, D) . K^T: K's rows read as column-major (D, 64) fragments.
#pragma unroll
    for (int n = 0; n < kTile / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int c = 0; c < D / 16; ++c) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> k_frag;
        wmma::load_matrix_sync(k_frag, k_tile + n * 16 * D + c * 16, D);
        wmma::mma_sync(acc, q_frag[c], k_frag, acc);
      }
      wmma::store_matrix_sync(scratch + n * 16, acc, kTile, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax in base 2. Key kt * 64 <= query for every tile visited, so the max is finite.
    float* s_row = scratch + my_row * kTile + half * 32;
    float tile_max = -INFINITY;
    for (int j = 0; j < 32; ++j) {
      const int key = kt * kTile + half * 32 + j;
      const float s = (causal && key > query) ? -INFINITY : s_row[j] * scale_log2;
      s_row[j] = s;
      tile_max = fmaxf(tile_max, s);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m_run, tile_max);
    float tile_sum = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float p = exp2f(s_row[j] - m_new);
      p_tile[my_row * kTile + half * 32 + j] = __float2bfloat16(p);
      tile_sum += p;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    const float alpha = exp2f(m_run - m_new);  // 0 on the first tile
    l_run = l_run * alpha + tile_sum;
    m_run = m_new;
    if (half == 0) alpha_row[my_row] = alpha;
    __syncwarp();

    // P V (16, D) into scratch, then O = alpha * O + P V.
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int c = 0; c < kTile / 16; ++c) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> p_frag;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> v_frag;
        wmma::load_matrix_sync(p_frag, p_tile + c * 16, kTile);
        wmma::load_matrix_sync(v_frag, v_tile + c * 16 * D + n * 16, D);
        wmma::mma_sync(acc, p_frag, v_frag, acc);
      }
      wmma::store_matrix_sync(scratch + n * 16, acc, D, wmma::mem_row_major);
    }
    __syncwarp();
    for (int i = lane; i < kWarpRows * D; i += 32) o_acc[i] = o_acc[i] * alpha_row[i / D] + scratch[i];
    __syncwarp();
  }
  if (half == 0) l_row[my_row] = l_run;
  __syncwarp();
  for (int i = lane; i < kWarpRows * D; i += 32) {
    o[head + static_cast<size_t>(row0 + i / D) * D + i % D] = __float2bfloat16(o_acc[i] / l_row[i / D]);
  }
}

template <int D>
void launch_flash(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                  int64_t batch_heads, int64_t seq, bool causal, cudaStream_t stream) {
  // Per device, and cheap: set before every launch rather than remember where it was set.
  check_cuda(cudaFuncSetAttribute(flash_forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(FlashLayout<D>::total)),
             "allowing trainsim-flash-v1 its shared memory");
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)) * 1.4426950408889634);
  const dim3 grid(static_cast<unsigned>(seq / kTile), static_cast<unsigned>(batch_heads));
  flash_forward_kernel<D><<<grid, kWarps * 32, FlashLayout<D>::total, stream>>>(q, k, v, o, static_cast<int>(seq),
                                                                                scale_log2, causal);
}

// One block per checked row: scores in shared memory (fp32), softmax, then each thread one column.
__global__ void attention_reference_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                           const int64_t* rows, float* out, int64_t seq, int64_t head_dim,
                                           float scale, bool causal) {
  extern __shared__ float scores[];
  __shared__ float scratch[32];
  const int64_t flat = rows[blockIdx.x];
  const int64_t head = flat / seq, query = flat % seq;
  const __nv_bfloat16* q_row = q + flat * head_dim;
  const __nv_bfloat16* k_head = k + head * seq * head_dim;
  const __nv_bfloat16* v_head = v + head * seq * head_dim;
  const int64_t keys = causal ? query + 1 : seq;
  float local_max = -INFINITY;
  for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
    float s = 0.0f;
    for (int64_t c = 0; c < head_dim; ++c) s += __bfloat162float(q_row[c]) * __bfloat162float(k_head[j * head_dim + c]);
    scores[j] = s * scale;
    local_max = fmaxf(local_max, scores[j]);
  }
  const float row_max = block_max(local_max, scratch);
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
    scores[j] = expf(scores[j] - row_max);
    local_sum += scores[j];
  }
  const float sum = block_sum(local_sum, scratch);  // also orders the score writes before the reads
  for (int64_t c = threadIdx.x; c < head_dim; c += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < keys; ++j) acc += scores[j] * __bfloat162float(v_head[j * head_dim + c]);
    out[blockIdx.x * head_dim + c] = acc / sum;
  }
}

}  // namespace

void launch_flash_attention(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                            int64_t batch_heads, int64_t seq, int64_t head_dim, bool causal, cudaStream_t stream) {
  TRAINSIM_ASSERT(seq % kTile == 0 && seq > 0, "trainsim-flash-v1 takes seq in multiples of 64");
  TRAINSIM_ASSERT(batch_heads > 0 && batch_heads <= 65535, "trainsim-flash-v1 takes 1..65535 batch-heads");
  if (head_dim == 64) {
    launch_flash<64>(q, k, v, o, batch_heads, seq, causal, stream);
  } else {
    TRAINSIM_ASSERT(head_dim == 128, "trainsim-flash-v1 takes head_dim 64 or 128");
    launch_flash<128>(q, k, v, o, batch_heads, seq, causal, stream);
  }
}

void launch_attention_reference(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                const int64_t* rows, int64_t row_count, float* out, int64_t seq, int64_t head_dim,
                                bool causal, cudaStream_t stream) {
  TRAINSIM_ASSERT(seq <= 8192, "the attention reference keeps a row of scores in 32 KiB of shared memory");
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  attention_reference_kernel<<<static_cast<unsigned>(row_count), kReferenceThreads, seq * sizeof(float), stream>>>(
      q, k, v, rows, out, seq, head_dim, scale, causal);
  check_cuda(cudaGetLastError(), "launching the attention reference kernel");
}

}  // namespace trainsim
