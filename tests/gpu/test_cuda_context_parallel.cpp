// Context parallelism in the CUDA runtime, the host side (runs without a GPU): the ring's block
// schedule against the CPU ring's chunk pairs, the tokens a CP rank trains on against the CPU
// trainer's choice, and what check_cuda_plan takes and refuses with cp > 1. The kernels are
// tests/gpu/test_ring_attention_kernels.cpp; loss parity tests/runtime_gpu/parity.sh.
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/model_catalog.hpp"
#include "runtime/cpu/ring_attention.hpp"
#include "runtime/cuda/cuda_ring_attention.hpp"
#include "runtime/token_data.hpp"
#include "tests/gpu/runtime_test_support.hpp"

namespace trainsim {
namespace {

using gpu_test::refusal;

TEST_CASE("over the cp ring steps a rank's query chunks meet every key chunk at or before them once: the same chunk causal, earlier "
          "ones whole",
          "[cuda_runtime]") {
  for (int64_t cp = 1; cp <= 5; ++cp) {
    const int64_t seq = 2 * cp * 6, local = seq / cp, chunk = local / 2;
    const cuda::AttentionShape shape{2, local, 4, 2, 64};
    for (int64_t rank = 0; rank < cp; ++rank) {
      INFO("cp " << cp << " rank " << rank);
      std::map<std::pair<int64_t, int64_t>, int> met;  // (query position, key position) of each block's first rows
      for (int64_t step = 0; step < cp; ++step) {
        const int64_t source = (rank - step + cp) % cp;
        for (const cuda::AttentionBlock& b : cuda::ring_step_blocks(shape, cp, rank, source)) {
          CHECK(b.rows == chunk);
          CHECK(b.seq_rows == local);
          CHECK((b.q_row == 0 || b.q_row == chunk));
          CHECK((b.k_row == 0 || b.k_row == chunk));
          // The rows are the ones cpu::context_positions puts at those positions, on both ranks.
          CHECK(runtime::context_positions(seq, cp, rank)[static_cast<size_t>(b.q_row)] == b.q_position);
          CHECK(runtime::context_positions(seq, cp, source)[static_cast<size_t>(b.k_row)] == b.k_position);
          CHECK((b.k_position == b.q_position || b.k_position + b.rows <= b.q_position));  // causal diagonal, or every key seen
          ++met[{b.q_position, b.k_position}];
        }
      }
      // Each of the rank's two chunks meets every chunk from 0 up to itself exactly once.
      const runtime::ContextChunks mine = runtime::context_chunks(cp, rank);
      CHECK(met.size() == static_cast<size_t>(mine.first + 1 + mine.second + 1));
      for (const int64_t q : {mine.first, mine.second}) {
        for (int64_t k = 0; k <= q; ++k) CHECK(met[{q * chunk, k * chunk}] == 1);
      }
    }
  }
}

TEST_CASE("a CP rank of the CUDA runtime trains on the CPU trainer's rows of every sequence, tokens and targets", "[cuda_runtime]") {
  const int64_t seq = 16, cp = 2, sequences = 3;
  runtime::TokenBatch batch;
  for (int32_t i = 0; i < seq * sequences; ++i) {
    batch.tokens.push_back(i);
    batch.targets.push_back(1000 + i);
  }
  for (int64_t rank = 0; rank < cp; ++rank) {
    const std::vector<int32_t> positions = runtime::context_positions(seq, cp, rank);
    const runtime::TokenBatch mine = cuda::context_rows(batch, seq, positions);
    std::vector<int32_t> want;  // cpu::Trainer's micro_batches: sequence j's tokens at the rank's positions, in order
    for (int64_t j = 0; j < sequences; ++j) {
      for (int32_t p : positions) want.push_back(static_cast<int32_t>(j * seq + p));
    }
    CHECK(mine.tokens == want);
    for (size_t i = 0; i < want.size(); ++i) CHECK(mine.targets[i] == want[i] + 1000);
  }
  CHECK(cuda::context_rows(batch, seq, runtime::context_positions(seq, 2, 1)).tokens.front() == 4);  // chunk 1 of 4: rows 4..7, 8..11
}

TEST_CASE("the CUDA runtime takes cp with the p2p ring and refuses all_gather, unfused attention and a seq_len not divisible by 2 x cp",
          "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");  // seq_len 128
  ParallelPlan p;
  p.precision = Precision::kBf16;
  p.cp = 2;
  CHECK(refusal(m, p, 2).empty());
  p.dp = 2;
  p.tp = 2;
  p.sequence_parallel = true;
  p.zero_stage = 1;
  CHECK(refusal(m, p, 8).empty());
  p = ParallelPlan{};
  p.precision = Precision::kBf16;
  p.cp = 3;  // 128 is not a multiple of 6
  p.cp_comm = CpComm::kAllGather;
  p.attention = AttentionKernel::kUnfused;
  const std::string message = refusal(m, p, 3);
  CHECK_THAT(message, Catch::Contains("cp_comm all_gather"));
  CHECK_THAT(message, Catch::Contains("cp_comm p2p"));
  CHECK_THAT(message, Catch::Contains("cp 3 with attention unfused"));
  CHECK_THAT(message, Catch::Contains("--attention flash"));
  CHECK_THAT(message, Catch::Contains("cp 3: seq_len (128) must be divisible by 2 x cp (6: two load-balanced chunks per rank)"));
}

TEST_CASE("with cp the CUDA runtime's sequence-parallel check counts a CP rank's tokens", "[cuda_runtime]") {
  ModelSpec m = resolve_model("gpt-tiny");
  m.seq_len = 12;  // a CP rank holds 6 tokens of each sequence
  ParallelPlan p;
  p.precision = Precision::kBf16;
  p.cp = 2;
  p.tp = 4;
  p.sequence_parallel = true;
  CHECK_THAT(refusal(m, p, 8), Catch::Contains("micro_batch x seq_len / cp (6) divisible by tp (4)"));
  p.micro_batch = 2;
  CHECK_THAT(refusal(m, p, 8), !Catch::Contains("divisible by tp"));
}

}  // namespace
}  // namespace trainsim

#endif  // TRAINSIM_HAVE_CUDA_RUNTIME
