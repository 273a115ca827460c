// Context parallelism's GPU kernels (kernels/cuda/context_parallel.cuh) without NCCL: the
// cp ranks of a CP group simulated one after another on one GPU, each ring step's blocks chosen by
// the runtime's ring_step_blocks and its K, V read from the source rank's buffer, merged by
// log-sum-exp, against the CPU's causal attention over whole sequences (output, lse, dQ, dK, dV);
// the merge kernel against the CPU's merge_attention_block; the token and rotary embeddings at a
// CP rank's true positions against the CPU model's. Bounds as test_cuda_kernels.cpp (the merged
// output is fp32 here but its blocks' P is rounded to bf16 as in the flash forward: 1e-2). Without
// a visible GPU every test warns "no GPU: skipped" and passes.
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/attention_blocks.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cuda/context_parallel.cuh"
#include "runtime/context_chunks.hpp"
#include "runtime/cpu/ring_attention.hpp"
#include "runtime/cuda/cuda_ring_attention.hpp"
#include "tests/gpu/device_test_support.hpp"

using namespace trainsim::gpu_test;
namespace cpu = trainsim::cpu;
namespace runtime = trainsim::runtime;
namespace cuda = trainsim::cuda;

namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

struct RingCase {
  int64_t batch, seq, heads, kv_heads, head_dim, cp;
};

// Chunks (seq / 2cp) of half a tile, of one and a half (the diagonal inside a chunk), GQA, head_dim
// 32 (computed padded) and 128, one to four ranks (cp 1: the rank's two chunks are the sequence).
const std::vector<RingCase> kRingCases = {
    {2, 128, 2, 2, 64, 2}, {1, 192, 4, 2, 64, 3}, {1, 400, 4, 1, 128, 2},
    {2, 120, 6, 3, 32, 2}, {1, 256, 2, 2, 64, 4}, {2, 100, 2, 2, 64, 1},
};

std::string describe(const RingCase& c) {
  return "batch " + std::to_string(c.batch) + ", seq " + std::to_string(c.seq) + ", heads " + std::to_string(c.heads) + ", kv_heads " +
         std::to_string(c.kv_heads) + ", head_dim " + std::to_string(c.head_dim) + ", cp " + std::to_string(c.cp);
}

// Row i of each sequence's local rows is row positions[i] of the sequence in `full` (cols wide):
// gather takes the local rows out, scatter puts `cols` columns of them back at column `first`.
std::vector<float> gather_rows(const std::vector<float>& full, int64_t cols, int64_t batch, int64_t seq,
                               const std::vector<int32_t>& positions) {
  std::vector<float> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int32_t p : positions) {
      const auto row = full.begin() + (b * seq + p) * cols;
      out.insert(out.end(), row, row + cols);
    }
  }
  return out;
}

void scatter_rows(const std::vector<float>& local, int64_t local_cols, int64_t batch, int64_t seq, const std::vector<int32_t>& positions,
                  std::vector<float>& full, int64_t cols, int64_t first) {
  const int64_t rows = static_cast<int64_t>(positions.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < local_cols; ++c) {
        full[static_cast<size_t>((b * seq + positions[static_cast<size_t>(i)]) * cols + first + c)] =
            local[static_cast<size_t>((b * rows + i) * local_cols + c)];
      }
    }
  }
}

// The cp ranks' buffers on one GPU and their rings run rank after rank (no transfers: a step reads
// the source rank's K, V and adds into its dK, dV directly).
class SimulatedRing {
 public:
  SimulatedRing(const RingCase& c, const std::vector<float>& qkv, const std::vector<float>& dout)
      : c_(c), local_{c.batch, c.seq / c.cp, c.heads, c.kv_heads, c.head_dim}, width_((c.heads + 2 * c.kv_heads) * c.head_dim),
        q_width_(c.heads * c.head_dim), kv_width_(2 * c.kv_heads * c.head_dim), tokens_(c.batch * c.seq / c.cp) {
    for (int64_t r = 0; r < c.cp; ++r) {
      Rank rank;
      rank.positions = runtime::context_positions(c.seq, c.cp, r);
      const std::vector<float> local = gather_rows(qkv, width_, c.batch, c.seq, rank.positions);
      std::vector<float> kv;
      for (int64_t t = 0; t < tokens_; ++t) kv.insert(kv.end(), local.begin() + t * width_ + q_width_, local.begin() + (t + 1) * width_);
      rank.qkv = std::make_unique<DeviceArray<bf16>>(to_bf16(local));
      rank.kv = std::make_unique<DeviceArray<bf16>>(to_bf16(kv));
      rank.dout = std::make_unique<DeviceArray<bf16>>(to_bf16(gather_rows(dout, q_width_, c.batch, c.seq, rank.positions)));
      rank.out = std::make_unique<DeviceArray<bf16>>(static_cast<size_t>(tokens_ * q_width_));
      rank.acc = std::make_unique<DeviceArray<float>>(std::vector<float>(static_cast<size_t>(tokens_ * q_width_), 0.0f));
      rank.dq = std::make_unique<DeviceArray<float>>(std::vector<float>(static_cast<size_t>(tokens_ * q_width_), 0.0f));
      rank.dkv = std::make_unique<DeviceArray<float>>(std::vector<float>(static_cast<size_t>(tokens_ * kv_width_), 0.0f));
      rank.lse = std::make_unique<DeviceArray<float>>(static_cast<size_t>(lse_count()));
      rank.drow = std::make_unique<DeviceArray<float>>(static_cast<size_t>(lse_count()));
      ranks_.push_back(std::move(rank));
    }
  }

  // CudaRingAttention::forward of every rank.
  void forward() {
    DeviceArray<float> partial(static_cast<size_t>(tokens_ * q_width_)), partial_lse(static_cast<size_t>(lse_count()));
    for (int64_t r = 0; r < c_.cp; ++r) {
      Rank& me = ranks_[static_cast<size_t>(r)];
      cuda::fill_fp32(me.lse->get(), kMinusInfinity, lse_count(), nullptr);
      for (int64_t step = 0; step < c_.cp; ++step) {
        const Rank& source = ranks_[static_cast<size_t>((r - step + c_.cp) % c_.cp)];
        for (const cuda::AttentionBlock& b : cuda::ring_step_blocks(local_, c_.cp, r, (r - step + c_.cp) % c_.cp)) {
          cuda::attention_block_forward(me.qkv->get(), source.kv->get(), partial.get(), partial_lse.get(), b, nullptr);
          cuda::attention_block_merge(me.acc->get(), me.lse->get(), partial.get(), partial_lse.get(), b, nullptr);
        }
      }
      cuda::fp32_to_bf16(me.acc->get(), me.out->get(), tokens_ * q_width_, nullptr);
    }
  }

  // CudaRingAttention::backward of every rank (after forward).
  void backward() {
    for (Rank& me : ranks_) cuda::attention_row_dot(me.dout->get(), me.out->get(), me.drow->get(), local_, nullptr);
    for (int64_t r = 0; r < c_.cp; ++r) {
      Rank& me = ranks_[static_cast<size_t>(r)];
      for (int64_t step = 0; step < c_.cp; ++step) {
        const int64_t s = (r - step + c_.cp) % c_.cp;
        for (const cuda::AttentionBlock& b : cuda::ring_step_blocks(local_, c_.cp, r, s)) {
          Rank& source = ranks_[static_cast<size_t>(s)];
          cuda::attention_block_backward(me.dout->get(), me.qkv->get(), source.kv->get(), me.lse->get(), me.drow->get(), me.dq->get(),
                                         source.dkv->get(), b, nullptr);
        }
      }
    }
  }

  // The ranks' results in whole-sequence order: out (batch * seq, heads d), dqkv (qkv's layout),
  // lse (batch * heads * seq).
  std::vector<float> out() const {
    std::vector<float> full(static_cast<size_t>(c_.batch * c_.seq * q_width_));
    for (const Rank& r : ranks_) scatter_rows(r.acc->download(), q_width_, c_.batch, c_.seq, r.positions, full, q_width_, 0);
    return full;
  }
  std::vector<float> dqkv() const {
    std::vector<float> full(static_cast<size_t>(c_.batch * c_.seq * width_));
    for (const Rank& r : ranks_) {
      scatter_rows(r.dq->download(), q_width_, c_.batch, c_.seq, r.positions, full, width_, 0);
      scatter_rows(r.dkv->download(), kv_width_, c_.batch, c_.seq, r.positions, full, width_, q_width_);
    }
    return full;
  }
  std::vector<float> lse() const {  // a (batch * heads, seq / cp) table per rank: one column per local row
    const int64_t bh = c_.batch * c_.heads;
    std::vector<float> full(static_cast<size_t>(bh * c_.seq));  // (seq, batch * heads) until transposed back
    for (const Rank& r : ranks_) scatter_rows(transpose(r.lse->download()), bh, 1, c_.seq, r.positions, full, bh, 0);
    return transpose_back(full);
  }

 private:
  struct Rank {
    std::vector<int32_t> positions;
    Device<bf16> qkv, kv, dout, out;
    Device<float> acc, dq, dkv, lse, drow;
  };
  int64_t lse_count() const { return c_.batch * c_.heads * local_.seq; }
  // (batch heads, n) <-> (n, batch heads), so that scatter_rows places lse entries by row.
  std::vector<float> transpose(const std::vector<float>& m) const { return flip(m, c_.batch * c_.heads, local_.seq); }
  std::vector<float> transpose_back(const std::vector<float>& m) const { return flip(m, c_.seq, c_.batch * c_.heads); }
  static std::vector<float> flip(const std::vector<float>& m, int64_t rows, int64_t cols) {
    std::vector<float> out(m.size());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(j * rows + i)] = m[static_cast<size_t>(i * cols + j)];
    }
    return out;
  }

  RingCase c_;
  cuda::AttentionShape local_;
  int64_t width_, q_width_, kv_width_, tokens_;
  std::vector<Rank> ranks_;
};

// log sum_{j <= i} exp(scale q_i . k_j) of every (batch, head, query), in double.
std::vector<float> causal_lse(const Matrix& qkv, const RingCase& c) {
  const int64_t d = c.head_dim, group = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<float> out(static_cast<size_t>(c.batch * c.heads * c.seq));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t i = 0; i < c.seq; ++i) {
        double sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          const double s = qkv.row(b * c.seq + i).segment(h * d, d).dot(qkv.row(b * c.seq + j).segment((c.heads + h / group) * d, d));
          sum += std::exp(scale * s);
        }
        out[static_cast<size_t>((b * c.heads + h) * c.seq + i)] = static_cast<float>(std::log(sum));
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("ring attention's GPU blocks on cp simulated ranks, merged by their log-sum-exp, give causal attention and its gradients",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  for (const RingCase& c : kRingCases) {
    INFO(describe(c));
    const int64_t rows = c.batch * c.seq, width = (c.heads + 2 * c.kv_heads) * c.head_dim;
    const std::vector<float> qkv = random_values(static_cast<size_t>(rows * width), 41);
    const std::vector<float> dout = random_values(static_cast<size_t>(rows * c.heads * c.head_dim), 42);
    const Matrix qkv_m = to_matrix(qkv, rows, width);
    cpu::AttentionCache cache;
    const Matrix want_out = cpu::causal_attention(qkv_m, c.batch, c.seq, c.heads, c.head_dim, cache, c.kv_heads);
    const Matrix want_dqkv = cpu::causal_attention_backward(to_matrix(dout, rows, c.heads * c.head_dim), qkv_m, c.batch, c.seq, c.heads,
                                                            c.head_dim, cache, c.kv_heads);
    SimulatedRing ring(c, qkv, dout);
    ring.forward();
    ring.backward();
    CHECK(relative_error(ring.out(), want_out) < kBf16Tolerance);
    CHECK(relative_error(ring.lse(), causal_lse(qkv_m, c)) < 1e-3);  // fp32 softmax statistics, merged
    CHECK(relative_error(ring.dqkv(), want_dqkv) < kAttentionBackwardTolerance);
  }
}

TEST_CASE("the GPU log-sum-exp merge equals the CPU's on a block's rows, rows not seen yet included, and leaves other rows alone",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  cuda::AttentionBlock b;  // rows 9 .. 15 of 20 per sequence; 40 columns: two passes of a warp's lanes
  b.batch = 2;
  b.heads = 3;
  b.head_dim = 40;
  b.seq_rows = 20;
  b.rows = 7;
  b.q_row = 9;
  const int64_t width = b.heads * b.head_dim, tokens = b.batch * b.seq_rows, lse_count = b.batch * b.heads * b.seq_rows;
  const std::vector<float> out = random_values(static_cast<size_t>(tokens * width), 43);
  const std::vector<float> out_b = random_values(static_cast<size_t>(tokens * width), 44);
  std::vector<float> lse = random_values(static_cast<size_t>(lse_count), 45, 1.0f, 4.0f);
  const std::vector<float> lse_b = random_values(static_cast<size_t>(lse_count), 46, 1.0f, 4.0f);
  for (size_t i = 0; i < lse.size(); i += 3) lse[i] = kMinusInfinity;  // rows that have seen no key yet
  DeviceArray<float> out_d(out), lse_d(lse), out_b_d(out_b), lse_b_d(lse_b);
  cuda::attention_block_merge(out_d.get(), lse_d.get(), out_b_d.get(), lse_b_d.get(), b, nullptr);
  Matrix want = to_matrix(out, tokens, width);
  const Matrix block_out = to_matrix(out_b, tokens, width);
  std::vector<float> want_lse = lse;
  for (int64_t s = 0; s < b.batch; ++s) {
    for (int64_t h = 0; h < b.heads; ++h) {
      const int64_t row = s * b.seq_rows + b.q_row, at = (s * b.heads + h) * b.seq_rows + b.q_row;
      cpu::merge_attention_block(want.block(row, h * b.head_dim, b.rows, b.head_dim), &want_lse[static_cast<size_t>(at)],
                                 block_out.block(row, h * b.head_dim, b.rows, b.head_dim), &lse_b[static_cast<size_t>(at)]);
    }
  }
  const std::vector<float> got = out_d.download(), got_lse = lse_d.download();
  CHECK(relative_error(got, want) < kFp32Tolerance);
  CHECK(relative_error(got_lse, want_lse) < kFp32Tolerance);
  bool others_untouched = true;  // the CPU merge leaves them as they were: compare exactly
  for (int64_t r = 0; r < tokens; ++r) {
    const int64_t local = r % b.seq_rows;
    if (local >= b.q_row && local < b.q_row + b.rows) continue;
    for (int64_t c = 0; c < width; ++c) {
      others_untouched &= got[static_cast<size_t>(r * width + c)] == out[static_cast<size_t>(r * width + c)];
    }
  }
  CHECK(others_untouched);
}

TEST_CASE("CUDA embedding and rotary at a CP rank's true positions match the CPU model's, positions 0..seq-1 change no bit",
          "[cuda_kernels]") {
  SKIP_WITHOUT_GPU();
  const int64_t seq = 24, cp = 3, local = seq / cp, batch = 2, rows = batch * local, vocab = 40, hidden = 64;
  const std::vector<int32_t> positions = runtime::context_positions(seq, cp, 1);  // chunks 1 and 4 of 6: 4..7, 16..19
  std::vector<int32_t> tokens(static_cast<size_t>(rows)), identity(static_cast<size_t>(local));
  for (int64_t r = 0; r < rows; ++r) tokens[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7) % 13);
  for (int64_t i = 0; i < local; ++i) identity[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  const auto wte = random_values(static_cast<size_t>(vocab * hidden), 47), wpe = random_values(static_cast<size_t>(seq * hidden), 48);
  const auto dout = random_values(static_cast<size_t>(rows * hidden), 49);
  DeviceArray<int32_t> tok(tokens), pos(positions), ident(identity);
  DeviceArray<bf16> wte_d(to_bf16(wte)), wpe_d(to_bf16(wpe)), out(static_cast<size_t>(rows * hidden)), dout_d(to_bf16(dout));
  DeviceArray<bf16> plain(static_cast<size_t>(rows * hidden)), at_identity(static_cast<size_t>(rows * hidden));
  DeviceArray<float> dwte(std::vector<float>(wte.size(), 0.0f)), dwpe(std::vector<float>(wpe.size(), 0.0f));
  cuda::embedding_forward_at(tok.get(), wte_d.get(), wpe_d.get(), pos.get(), out.get(), rows, local, hidden, nullptr);
  cuda::embedding_backward_at(tok.get(), dout_d.get(), dwte.get(), dwpe.get(), pos.get(), rows, local, hidden, nullptr);
  std::vector<float> want(static_cast<size_t>(rows * hidden)), want_dwpe(wpe.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < hidden; ++c) {
      const size_t p = static_cast<size_t>(positions[static_cast<size_t>(r % local)] * hidden + c);
      const size_t i = static_cast<size_t>(r * hidden + c);
      want[i] = wte[static_cast<size_t>(tokens[static_cast<size_t>(r)] * hidden + c)] + wpe[p];
      want_dwpe[p] += dout[i];
    }
  }
  CHECK(relative_error(download_float(out), want) < kBf16Tolerance);
  CHECK(relative_error(dwpe.download(), want_dwpe) < kFp32Tolerance);
  cuda::embedding_forward(tok.get(), wte_d.get(), wpe_d.get(), plain.get(), rows, local, hidden, nullptr);
  cuda::embedding_forward_at(tok.get(), wte_d.get(), wpe_d.get(), ident.get(), at_identity.get(), rows, local, hidden, nullptr);
  CHECK(download_float(plain) == download_float(at_identity));

  const int64_t heads = 4, kv = 2, d = 32, width = (heads + 2 * kv) * d;
  const auto x = random_values(static_cast<size_t>(rows * width), 50);
  DeviceArray<bf16> qkv(to_bf16(x));
  cuda::rotary_embedding_at(qkv.get(), pos.get(), rows, local, heads, kv, d, 500000.0, false, nullptr);
  Matrix want_qkv = to_matrix(x, rows, width);
  cpu::rotary_embedding(want_qkv, cpu::rotary_tables(positions, d, 500000.0), heads, kv, d, false);  // cpu_model.cpp's rotary_
  CHECK(relative_error(download_float(qkv), want_qkv) < kBf16Tolerance);
}

#endif  // TRAINSIM_HAVE_CUDA_RUNTIME
