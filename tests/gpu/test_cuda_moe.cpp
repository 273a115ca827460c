// The CUDA runtime's MoE layers (runtime/cuda/cuda_moe.hpp and its host pieces): what it takes and
// refuses, the dispatch's index maps carrying every copy to its expert and back over ep ranks
// (host loops stand in for the kernels and the all-to-alls), the split of the gradient buffer into
// expert and dense runs, the expert-parallel global norm counting every tensor once: all run
// anywhere. One MoE layer on one GPU against runtime/cpu/moe_layer needs a GPU (skipped with a
// warning without one). Multi-rank EP parity is tests/runtime_gpu/parity.sh (gpu_tests.cmake).
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME

#include <catch2/catch.hpp>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/model_catalog.hpp"
#include "runtime/cpu/moe_layer.hpp"
#include "runtime/cuda/cuda_moe.hpp"
#include "runtime/cuda/cuda_optimizer.hpp"
#include "runtime/cuda/expert_gradients.hpp"
#include "runtime/cuda/moe_index_maps.hpp"
#include "tests/gpu/device_test_support.hpp"
#include "tests/gpu/runtime_test_support.hpp"

namespace trainsim {
namespace {

using cpu::Matrix;
using gpu_test::host_layout;
using gpu_test::refusal;

ModelSpec moe_tiny() { return resolve_model(std::string(TRAINSIM_TEST_DATA) + "/models/moe-tiny.json"); }

Matrix random_matrix(int64_t rows, int64_t cols, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// Stage `pp_rank` of `pp` (layers split evenly), EP rank `ep_rank` of `ep`, tp 1.
runtime::StageLayout moe_stage(const ModelSpec& m, int64_t pp, int64_t pp_rank, int64_t ep, int64_t ep_rank) {
  runtime::StageLayout layout = gpu_test::stage_layout(m, pp, pp_rank);
  layout.ep = ep;
  layout.ep_rank = ep_rank;
  return layout;
}

}  // namespace

TEST_CASE("the CUDA runtime takes MoE models at tp 1 with ep over the dp ranks, and refuses expert TP, CP and ZeRO with ep > 1",
          "[cuda_runtime][moe]") {
  const ModelSpec m = moe_tiny();
  ParallelPlan p;
  p.dp = 4;
  p.ep = 2;
  p.pp = 1;
  CHECK(refusal(m, p, 4).empty());
  p.zero_stage = 1;
  CHECK_THAT(refusal(m, p, 4), Catch::Contains("zero 1 with ep 2: the CUDA runtime's ZeRO shards one flat buffer"));
  p.ep = 1;  // ZeRO with every expert on every rank: the experts are reduced over DP like the rest
  for (const int zero : {1, 2, 3}) {
    p.zero_stage = zero;
    CHECK(refusal(m, p, 4).empty());
  }
  p = ParallelPlan{};
  p.tp = 2;
  p.sequence_parallel = true;
  CHECK_THAT(refusal(m, p, 2), Catch::Contains("tp 2 with the MoE model \"moe-tiny\": the CUDA runtime runs MoE layers at tp 1"));
  CHECK_THAT(refusal(m, p, 2), Catch::Contains("--backend cpu --precision fp32"));
  p = ParallelPlan{};
  p.cp = 2;
  CHECK_THAT(refusal(m, p, 2), Catch::Contains("cp 2 with the MoE model \"moe-tiny\""));
  p = ParallelPlan{};
  p.moe_capacity_factor = 1.25;
  CHECK_THAT(refusal(m, p, 1), Catch::Contains("moe_capacity_factor"));
}

namespace {

int64_t block_start(const std::vector<int64_t>& counts, int64_t block) {
  int64_t at = 0;
  for (int64_t b = 0; b < block; ++b) at += counts[static_cast<size_t>(b)];
  return at;
}

// `ep` ranks routing their own tokens, and the index maps each would follow on the GPU; host loops
// stand in for the kernels and the all-to-alls. Expert e multiplies its rows by 1 + e.
struct HostExpertParallel {
  int64_t tokens, experts, k, h, ep, local;
  std::vector<runtime::Routing> routing;
  std::vector<runtime::DispatchLayout> layout;
  std::vector<runtime::ExpertBatches> batches;
  std::vector<cuda::MoeIndexMaps> maps;
  std::vector<Matrix> x;

  HostExpertParallel(int64_t tokens_, int64_t experts_, int64_t k_, int64_t h_, int64_t ep_)
      : tokens(tokens_), experts(experts_), k(k_), h(h_), ep(ep_), local(experts_ / ep_) {
    for (int64_t r = 0; r < ep; ++r) {
      routing.push_back(runtime::route_top_k(random_matrix(tokens, experts, static_cast<unsigned>(10 + r)), k));
      layout.push_back(runtime::dispatch_layout(routing.back(), experts, ep));
      x.push_back(random_matrix(tokens, h, static_cast<unsigned>(20 + r)));
    }
    for (int64_t r = 0; r < ep; ++r) {  // the counts' all-to-all: block r of every source's expert counts
      std::vector<int64_t> received;
      for (const runtime::DispatchLayout& from : layout) {
        received.insert(received.end(), from.expert_rows.begin() + r * local, from.expert_rows.begin() + (r + 1) * local);
      }
      batches.push_back(runtime::expert_batches(received, ep, local));
      maps.push_back(cuda::index_maps(routing[static_cast<size_t>(r)], layout[static_cast<size_t>(r)], batches.back()));
    }
  }

  // Rank r: the rows it receives (each source's block for it, in source order) through its experts,
  // in expert-major order, then back in arrival order.
  Matrix processed(int64_t r) const {
    std::vector<std::pair<size_t, int64_t>> arrived;  // (source, token) of each received row
    for (size_t s = 0; s < layout.size(); ++s) {
      const int64_t first = block_start(layout[s].rank_rows, r);
      for (int64_t i = first; i < first + layout[s].rank_rows[static_cast<size_t>(r)]; ++i) {
        arrived.emplace_back(s, maps[s].token_of_row[static_cast<size_t>(i)]);
      }
    }
    const runtime::ExpertBatches& b = batches[static_cast<size_t>(r)];
    const cuda::MoeIndexMaps& m = maps[static_cast<size_t>(r)];
    REQUIRE(arrived.size() == b.row.size());
    Matrix major(static_cast<int64_t>(arrived.size()), h);
    const std::vector<int64_t> first = cuda::expert_first_rows(b);
    for (int64_t j = 0; j < local; ++j) {
      for (int64_t i = first[static_cast<size_t>(j)]; i < first[static_cast<size_t>(j)] + b.expert_rows[static_cast<size_t>(j)]; ++i) {
        const auto& [source, token] = arrived[static_cast<size_t>(m.received_row[static_cast<size_t>(i)])];
        major.row(i) = static_cast<float>(1 + r * local + j) * x[source].row(token);
      }
    }
    Matrix out(major.rows(), h);
    for (int64_t i = 0; i < major.rows(); ++i) out.row(i) = major.row(m.expert_major_row[static_cast<size_t>(i)]);
    return out;
  }

  // Rank s: its copies back from every rank (in rank order), summed into their tokens with their weights.
  Matrix output(size_t s, const std::vector<Matrix>& processed) const {
    Matrix combined(tokens * k, h);
    int64_t at = 0;
    for (int64_t r = 0; r < ep; ++r) {
      const int64_t from = block_start(batches[static_cast<size_t>(r)].source_rows, static_cast<int64_t>(s));
      for (int64_t i = 0; i < layout[s].rank_rows[static_cast<size_t>(r)]; ++i) combined.row(at++) = processed[static_cast<size_t>(r)].row(from + i);
    }
    Matrix y = Matrix::Zero(tokens, h);
    for (int64_t slot = 0; slot < tokens * k; ++slot) {
      y.row(slot / k) += maps[s].weight_of_slot[static_cast<size_t>(slot)] * combined.row(maps[s].row_of_slot[static_cast<size_t>(slot)]);
    }
    return y;
  }
};

}  // namespace

TEST_CASE("the CUDA runtime's MoE index maps carry every copy to its expert's rank and back into its token, over ep ranks", "[cuda_runtime][moe]") {
  const int64_t tokens = 9, experts = 4, k = 2, h = 3;
  for (const int64_t ep : {1, 2, 4}) {
    INFO("ep " << ep);
    const HostExpertParallel group(tokens, experts, k, h, ep);
    std::vector<Matrix> processed;
    for (int64_t r = 0; r < ep; ++r) {
      processed.push_back(group.processed(r));
      CHECK(processed.back().rows() <= cuda::max_received_rows(tokens, k, experts, ep));
    }
    for (size_t s = 0; s < static_cast<size_t>(ep); ++s) {  // token t comes back as sum_j w_tj (1 + e_tj) x_t
      const cuda::MoeIndexMaps& m = group.maps[s];
      Matrix want = Matrix::Zero(tokens, h);
      for (int64_t slot = 0; slot < tokens * k; ++slot) {
        const float w = m.weight_of_slot[static_cast<size_t>(slot)];
        want.row(slot / k) += w * static_cast<float>(1 + m.expert_of_slot[static_cast<size_t>(slot)]) * group.x[s].row(slot / k);
        CHECK(m.weight_of_row[static_cast<size_t>(m.row_of_slot[static_cast<size_t>(slot)])] == w);
      }
      CHECK((group.output(s, processed) - want).cwiseAbs().maxCoeff() < 1e-5f);
    }
  }
}

TEST_CASE("the CUDA runtime's expert runs hold exactly a stage's expert tensors, dense runs the rest of the gradient buffer", "[cuda_runtime][moe]") {
  const ModelSpec m = moe_tiny();
  const cuda::ParamLayout layout = host_layout(m, moe_stage(m, 1, 0, 2, 1), 2);
  for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{0, layout.padded_count}, layout.layer_ranges[1]}) {
    const auto experts = cuda::expert_runs(layout.views, begin, end), dense = cuda::dense_runs(layout.views, begin, end);
    std::vector<std::pair<int64_t, int64_t>> all = experts;
    all.insert(all.end(), dense.begin(), dense.end());
    std::sort(all.begin(), all.end());
    int64_t at = begin;  // together they tile [begin, end)
    for (const auto& [from, to] : all) {
      CHECK(from == at);
      CHECK(to > from);
      at = to;
    }
    CHECK(at == end);
    int64_t expert_views = 0;
    for (const cuda::ParamView& v : layout.views) {
      if (v.offset + v.count() <= begin || v.offset >= end) continue;
      INFO(v.name);
      expert_views += v.expert ? 1 : 0;
      CHECK(v.expert == (v.name.find(".expert") != std::string::npos));
      const auto& mine = v.expert ? experts : dense;
      CHECK(std::any_of(mine.begin(), mine.end(), [&](const auto& r) { return r.first <= v.offset && v.offset + v.count() <= r.second; }));
      if (v.expert) CHECK((v.name.find(".expert2.") != std::string::npos || v.name.find(".expert3.") != std::string::npos));
    }
    CHECK(expert_views == (begin == 0 ? m.layers : 1) * 2 * 2);  // EP rank 1 of 2: experts 2 and 3, w_1 and w_2 each
  }
}

TEST_CASE("with ep > 1 the CUDA runtime's global norm, summed over every rank, counts each tensor of the model once", "[cuda_runtime][moe]") {
  const ModelSpec m = moe_tiny();
  const int64_t dp = 4, ep = 2, pp = 2;
  std::map<std::string, int> counted;
  for (int64_t pp_rank = 0; pp_rank < pp; ++pp_rank) {
    for (int64_t dp_rank = 0; dp_rank < dp; ++dp_rank) {  // tp 1: the EP groups are dp ranks {0, 1} and {2, 3}
      const int64_t ep_rank = dp_rank % ep, expert_dp_rank = dp_rank / ep;
      for (const cuda::ParamView& v : host_layout(m, moe_stage(m, pp, pp_rank, ep, ep_rank), 1).views) {
        const bool replica = cuda::counts_in_norm(v, pp, pp_rank, 0);
        counted[v.name] += cuda::counts_in_expert_parallel_norm(v, replica, static_cast<int>(dp_rank), static_cast<int>(expert_dp_rank)) ? 1 : 0;
      }
    }
  }
  CHECK(counted.count("layer1.expert3.w_2") == 1);
  for (const auto& [name, times] : counted) {
    INFO(name);
    CHECK(times == 1);
  }
}

namespace {

using gpu_test::round_bf16;

runtime::Param& param_named(cpu::StageModel& model, const std::string& name) {
  for (runtime::Param& p : model.params()) {
    if (p.name == name) return p;
  }
  FAIL("no parameter " << name);
  return model.params().front();  // not reached: FAIL throws
}

cpu::FfnParams ffn_named(cpu::StageModel& model, const std::string& prefix, bool biases) {
  return cpu::FfnParams{&param_named(model, prefix + "w_1"), biases ? &param_named(model, prefix + "b_1") : nullptr,
                        &param_named(model, prefix + "w_2"), biases ? &param_named(model, prefix + "b_2") : nullptr};
}

template <class T>
std::vector<T> download(const T* device, int64_t count) {
  std::vector<T> host(static_cast<size_t>(count));
  REQUIRE(cudaMemcpy(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

Matrix download_matrix(const __nv_bfloat16* device, int64_t rows, int64_t cols) {
  const std::vector<__nv_bfloat16> b = download(device, rows * cols);
  Matrix m(rows, cols);
  for (size_t i = 0; i < b.size(); ++i) m.data()[i] = __bfloat162float(b[i]);
  return m;
}

double relative_error(const Matrix& got, const Matrix& want) {
  return static_cast<double>((got - want).norm()) / std::max(1e-30, static_cast<double>(want.norm()));
}

}  // namespace

// GPU-CHECK: the tolerance is set without a run: bf16 fc1, activation and expert outputs, the
// combine and the router's w (dw - sum w dw) chained; the attention backward's bound is 2e-2.
TEST_CASE("one GPU MoE layer matches runtime/cpu/moe_layer plus the shared experts in output, input and weight gradients (tp 1, ep 1)",
          "[cuda_runtime][moe]") {
  SKIP_WITHOUT_GPU();
  constexpr double kTolerance = 3e-2;
  for (const bool llama : {false, true}) {
    INFO((llama ? "moe-tiny: SwiGLU experts, a shared expert, no biases" : "gpt-tiny with GELU experts and biases, no shared expert"));
    ModelSpec m = llama ? moe_tiny() : resolve_model("gpt-tiny");
    if (!llama) m.moe = MoeSpec{4, 2, 64, 0};
    const runtime::StageLayout stage = moe_stage(m, 1, 0, 1, 0);
    cpu::StageModel model(m, stage, 5);
    for (runtime::Param& p : model.params()) {  // both sides start from the same bf16 numbers; biases made non-zero
      if (p.name.find(".b_") != std::string::npos) p.value = random_matrix(p.value.rows(), p.value.cols(), 7, 0.1f);
      p.value = p.value.unaryExpr([](float v) { return round_bf16(v); });
    }
    const int64_t T = m.seq_len, h = m.hidden;
    const auto bf16_values = [](const Matrix& a) -> Matrix { return a.unaryExpr([](float v) { return round_bf16(v); }); };
    const Matrix x = bf16_values(random_matrix(T, h, 8)), dy = bf16_values(random_matrix(T, h, 9, 0.1f));
    cuda::DeviceArena arena;
    cuda::ParamStore params(runtime::StageWeights{model.params(), {}}, stage, 1, arena, nullptr);
    cuda::Gemm gemm;
    cuda::CudaMoe moe(m, stage, T, params, arena, gemm, nullptr);
    cuda::EventClock clock;
    const cuda::NcclComm alone;
    cuda::EpCollectives ep(alone, MPI_COMM_NULL, clock, nullptr);
    moe.set_group(ep);
    cuda::MoeActivations acts;
    moe.allocate(acts);
    std::vector<__nv_bfloat16> xb(static_cast<size_t>(T * h)), dyb(xb.size());
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = __float2bfloat16(x.data()[i]), dyb[i] = __float2bfloat16(dy.data()[i]);
    cuda::DeviceBuffer<__nv_bfloat16> dx_in(arena, T * h, "x"), ddy(arena, T * h, "dy");
    REQUIRE(cudaMemcpy(dx_in.data(), xb.data(), dx_in.bytes(), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(ddy.data(), dyb.data(), ddy.bytes(), cudaMemcpyHostToDevice) == cudaSuccess);
    const Matrix y = download_matrix(moe.forward(0, dx_in.data(), acts, cuda::SpanKind::kForward), T, h);
    const Matrix dx = download_matrix(moe.backward(0, ddy.data(), dx_in.data(), acts, cuda::SpanKind::kBackward), T, h);

    cpu::MoeParams p;
    p.router = &param_named(model, "layer0.router");
    for (int64_t e = 0; e < m.moe->experts; ++e) p.experts.push_back(ffn_named(model, "layer0.expert" + std::to_string(e) + ".", m.linear_bias));
    const cpu::MoeShape shape{m.moe->experts, m.moe->top_k, m.ffn_kind == FfnKind::kSwiglu};
    cpu::SingleRankExperts one_rank;
    cpu::SingleRankGroup no_tp;
    cpu::MoeCache cache;
    cpu::FfnCache shared_cache;
    Matrix want_y = cpu::moe_forward(x, p, shape, one_rank, no_tp, cache);
    Matrix want_dx = cpu::moe_backward(dy, x, p, shape, one_rank, no_tp, cache);
    if (m.moe->shared_experts > 0) {
      const cpu::FfnParams shared = ffn_named(model, "layer0.shared.", m.linear_bias);
      want_y += cpu::ffn_forward(x, shared, shape.swiglu, true, shared_cache);
      want_dx += cpu::ffn_backward(dy, x, shared, shape.swiglu, shared_cache);
    }
    CHECK(relative_error(y, want_y) < kTolerance);
    CHECK(relative_error(dx, want_dx) < kTolerance);
    for (const cuda::ParamView& v : params.views()) {  // the router's, the experts' and the shared experts' gradients
      if (v.name.rfind("layer0.", 0) != 0 || (v.name.find("router") == std::string::npos && v.name.find("expert") == std::string::npos &&
                                              v.name.find("shared") == std::string::npos)) {
        continue;
      }
      INFO(v.name);
      const std::vector<float> g = download(params.grad_of(v), v.count());
      CHECK(relative_error(Eigen::Map<const Matrix>(g.data(), v.rows, v.cols), param_named(model, v.name).grad) < kTolerance);
    }
  }
}

}  // namespace trainsim

#endif  // TRAINSIM_HAVE_CUDA_RUNTIME
