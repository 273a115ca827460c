// The CUDA runtime (runtime/cuda/): what it refuses, and the host arithmetic it runs on (parameter
// layout, ZeRO shards, DP buckets, norm runs: run anywhere); its device memory accounting and
// upload (need a GPU: skipped with a warning without one). Loss parity with the CPU backend is
// tests/runtime_gpu/parity.sh (under mpirun).
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model/model_catalog.hpp"
#include "runtime/cuda/cuda_optimizer.hpp"
#include "runtime/cuda/device_arena.hpp"
#include "runtime/cuda/gradient_buckets.hpp"
#include "runtime/cuda/param_store.hpp"
#include "tests/gpu/device_test_support.hpp"
#include "tests/gpu/runtime_test_support.hpp"

namespace trainsim {
namespace {

using gpu_test::gpu_visible;
using gpu_test::host_layout;
using gpu_test::refusal;
using gpu_test::stage_layout;

TEST_CASE("the CUDA runtime refuses an fp32 plan, naming the precision key and bf16", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  ParallelPlan p;
  p.precision = Precision::kFp32;
  const std::string message = refusal(m, p, 1);
  CHECK_THAT(message, Catch::Contains("precision fp32"));
  CHECK_THAT(message, Catch::Contains("--precision bf16"));
  p.precision = Precision::kBf16;
  CHECK(refusal(m, p, 1).empty());
}

TEST_CASE("the CUDA runtime reports every unsupported key at once", "[cuda_runtime]") {
  ModelSpec m = resolve_model("gpt-tiny");
  m.position = PositionKind::kAlibi;
  m.dropout = true;
  ParallelPlan p;
  p.dp = 2;
  p.cp = 2;
  p.cp_comm = CpComm::kA2a;
  const std::string message = refusal(m, p, 3);
  CHECK_THAT(message, Catch::Contains("positions alibi"));
  CHECK_THAT(message, Catch::Contains("dropout"));
  CHECK_THAT(message, Catch::Contains("cp_comm a2a: the CUDA runtime's context parallelism is the p2p ring"));
  CHECK_THAT(message, Catch::Contains("mpirun started 3"));
}

TEST_CASE("the CUDA runtime takes Llama-style models: RMSNorm, RoPE, SwiGLU, GQA, untied head, no biases", "[cuda_runtime]") {
  ModelSpec m = resolve_model("gpt-tiny");
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRope;
  m.ffn_kind = FfnKind::kSwiglu;
  m.kv_heads = 2;
  m.tied_embeddings = false;
  m.linear_bias = false;
  CHECK(refusal(m, ParallelPlan{}, 1).empty());
  m.head_dim = 31;
  m.hidden = m.heads * m.head_dim;
  CHECK_THAT(refusal(m, ParallelPlan{}, 1), Catch::Contains("head_dim 31 is odd"));
}

TEST_CASE("the CUDA runtime refuses heads wider than its flash attention takes", "[cuda_runtime]") {
  ModelSpec m = resolve_model("gpt-tiny");
  m.head_dim = 160;
  m.hidden = m.heads * m.head_dim;
  ParallelPlan p;
  CHECK_THAT(refusal(m, p, 1), Catch::Contains("head_dim 160 > 128"));
  p.attention = AttentionKernel::kUnfused;  // the unfused path takes any head width
  CHECK(refusal(m, p, 1).empty());
  p.attention = AttentionKernel::kFlash;
  m = resolve_model("gpt-tiny");
  p.micro_batch = 65536 / m.heads * 2;
  p.global_batch = p.micro_batch;
  CHECK_THAT(refusal(m, p, 1), Catch::Contains("must be at most 65535"));
}

TEST_CASE("a stage's parameters lie 256-byte aligned without overlap, whole layers in order, padded for the shards", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  for (const int64_t pp_rank : {0, 1}) {
    for (const int64_t shards : {1, 3, 4}) {
      const runtime::StageLayout stage = stage_layout(m, 2, pp_rank, 2, 1, false);
      cpu::StageModel model(m, stage, 3);
      const cuda::ParamLayout layout = cuda::layout_params(model.params(), stage, shards);
      INFO("stage " << pp_rank << ", " << shards << " shards");
      REQUIRE(layout.views.size() == model.params().size());
      CHECK(layout.padded_count % (shards * cuda::ParamLayout::kAlignElements) == 0);
      CHECK(layout.views.front().name == "wte");  // the first stage embeds, the last one has the LM head
      int64_t end = 0;
      for (size_t i = 0; i < layout.views.size(); ++i) {
        const cuda::ParamView& v = layout.views[i];
        const runtime::Param& source = model.params()[layout.source[i]];
        CHECK(v.name == source.name);
        CHECK(v.count() == source.value.size());
        CHECK(v.offset % cuda::ParamLayout::kAlignElements == 0);
        CHECK(v.offset >= end);
        end = v.offset + v.count();
      }
      CHECK(end <= layout.padded_count);
      REQUIRE(static_cast<int64_t>(layout.layer_ranges.size()) == stage.layer_count());
      for (size_t l = 0; l < layout.layer_ranges.size(); ++l) {
        const auto [begin, stop] = layout.layer_ranges[l];
        if (l > 0) CHECK(begin >= layout.layer_ranges[l - 1].second);
        int64_t inside = 0;  // the layer's 12 tensors, and nothing else, lie in its range
        for (const cuda::ParamView& v : layout.views) {
          const bool in_range = v.offset >= begin && v.offset + v.count() <= stop;
          CHECK(in_range == (v.layer == static_cast<int64_t>(l)));
          inside += in_range ? 1 : 0;
        }
        CHECK(inside == 12);
      }
    }
  }
}

TEST_CASE("ZeRO-3 units: embeddings, each layer, final norm, padded for the shards, layers alike inside", "[cuda_runtime]") {
  for (const char* name : {"gpt-tiny", "llama"}) {
    ModelSpec m = resolve_model("gpt-tiny");
    m.layers = 3;
    if (std::string(name) == "llama") {  // untied head: lm_head in the last unit; no wpe
      m.norm = NormKind::kRmsNorm, m.position = PositionKind::kRope, m.tied_embeddings = false, m.linear_bias = false;
    }
    for (const int64_t shards : {2, 3}) {
      INFO(name << ", " << shards << " shards");
      const cuda::ParamLayout layout = host_layout(m, stage_layout(m, 1, 0, 1, 0, false), shards, true);
      REQUIRE(layout.units.size() == static_cast<size_t>(m.layers + 2));
      int64_t at = 0;
      for (const auto& [begin, end] : layout.units) {
        CHECK(begin == at);  // contiguous, covering the buffer
        CHECK((end - begin) % (shards * cuda::ParamLayout::kAlignElements) == 0);
        at = end;
      }
      CHECK(at == layout.padded_count);
      REQUIRE(layout.unit_of_layer.size() == static_cast<size_t>(m.layers));
      for (size_t l = 0; l < layout.unit_of_layer.size(); ++l) CHECK(layout.unit_of_layer[l] == static_cast<int64_t>(l + 1));
      // Every tensor in its unit; a layer's tensors at the same offsets from its unit's start.
      std::vector<int64_t> offsets_in_layer0;
      for (const cuda::ParamView& v : layout.views) {
        const int64_t u = layout.unit_at(v.offset);
        CHECK(v.offset + v.count() <= layout.units[static_cast<size_t>(u)].second);
        if (v.layer >= 0) {
          CHECK(u == layout.unit_of_layer[static_cast<size_t>(v.layer)]);
          const int64_t relative = v.offset - layout.units[static_cast<size_t>(u)].first;
          if (v.layer == 0) offsets_in_layer0.push_back(relative);
          if (v.layer == 2) CHECK(std::find(offsets_in_layer0.begin(), offsets_in_layer0.end(), relative) != offsets_in_layer0.end());
        } else {
          const bool first = v.name == "wte" || v.name == "wpe";
          CHECK(u == (first ? 0 : m.layers + 1));
        }
      }
      CHECK(layout.units[1].second - layout.units[1].first == layout.units[3].second - layout.units[3].first);
    }
  }
}

TEST_CASE("ZeRO-3 shard spaces: each element of the buffer is kept by one rank, each counting gradient normed by one", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  const int64_t shards = 3;
  const cuda::ParamLayout layout = host_layout(m, stage_layout(m, 1, 0, 1, 0, false), shards, true);
  std::vector<float> flat(static_cast<size_t>(layout.padded_count));
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<float>(i);
  std::vector<bool> counts;
  int64_t counting = 0;
  for (const cuda::ParamView& v : layout.views) {
    counts.push_back(v.name.find("ln") == std::string::npos);  // norms do not count, say
    counting += counts.back() ? v.count() : 0;
  }
  std::vector<int> kept(flat.size(), 0), normed(flat.size(), 0);
  int64_t total = 0;
  for (int64_t rank = 0; rank < shards; ++rank) {
    const cuda::ShardSpace space = cuda::ShardSpace::of(layout, shards, rank);
    CHECK(space.count * shards == layout.padded_count);
    const std::vector<float> mine = space.take(layout, flat);
    REQUIRE(static_cast<int64_t>(mine.size()) == space.count);
    for (float value : mine) ++kept[static_cast<size_t>(value)];
    for (const auto& [from, to] : space.norm_runs(layout, counts)) {
      CHECK(0 <= from);
      CHECK(from < to);
      CHECK(to <= space.count);
      for (int64_t i = from; i < to; ++i) ++normed[static_cast<size_t>(mine[static_cast<size_t>(i)])];
      total += to - from;
    }
  }
  CHECK(std::all_of(kept.begin(), kept.end(), [](int k) { return k == 1; }));
  CHECK(total == counting);
  for (size_t i = 0; i < layout.views.size(); ++i) {  // the counting tensors' elements exactly
    const cuda::ParamView& v = layout.views[i];
    for (int64_t e = v.offset; e < v.offset + v.count(); e += 97) CHECK(normed[static_cast<size_t>(e)] == (counts[i] ? 1 : 0));
  }
}

TEST_CASE("with sequence parallelism the GPU stage sums over TP the norms and row-parallel biases, not wpe", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  for (const bool sp : {false, true}) {
    const runtime::StageLayout stage = stage_layout(m, 1, 0, 2, 0, sp);
    for (const cuda::ParamView& v : host_layout(m, stage, 1).views) {
      INFO(v.name << (sp ? " with SP" : " without SP"));
      const std::string tensor = v.name.substr(v.name.find('.') + 1);
      const bool partial = tensor == "ln1_g" || tensor == "ln1_b" || tensor == "ln2_g" || tensor == "ln2_b" || tensor == "b_o" ||
                           tensor == "b_2" || v.name == "lnf_g" || v.name == "lnf_b";
      CHECK(v.sp_partial == (sp && partial));  // wpe: the embedding's input gradient is gathered first
    }
  }
}

TEST_CASE("ZeRO shards tile the padded buffer in 256-byte aligned pieces", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  for (const int64_t shards : {1, 2, 3, 8}) {
    const cuda::ParamLayout layout = host_layout(m, stage_layout(m, 1, 0, 1, 0, false), shards);
    int64_t at = 0;
    for (int64_t r = 0; r < shards; ++r) {
      const auto [begin, end] = layout.shard(shards, r);
      CHECK(begin == at);
      CHECK(begin % cuda::ParamLayout::kAlignElements == 0);
      CHECK(end - begin == layout.padded_count / shards);
      at = end;
    }
    CHECK(at == layout.padded_count);
  }
}

TEST_CASE("DP buckets and the outer ranges cover the gradient buffer once, a bucket is whole layers, ready after its lowest", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  for (const auto& [pp, pp_rank] : std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {3, 0}, {3, 1}, {3, 2}}) {  // 2, 0, 1, 1 layers
    const cuda::ParamLayout layout = host_layout(m, stage_layout(m, pp, pp_rank, 1, 0, false), 2);
    const int64_t layer_bytes = (layout.layer_ranges.empty() ? 0 : layout.layer_ranges[0].second - layout.layer_ranges[0].first) * 4;
    for (const int64_t bucket_bytes : {int64_t{1}, layer_bytes + 1, int64_t{25} << 20}) {
      INFO("stage " << pp_rank << " of " << pp << ", buckets of " << bucket_bytes << " bytes");
      const cuda::GradientBuckets plan = cuda::plan_gradient_buckets(layout.layer_ranges, layout.padded_count, bucket_bytes);
      std::vector<int> covered(static_cast<size_t>(layout.padded_count), 0);
      const auto cover = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++covered[static_cast<size_t>(i)];
      };
      for (const auto& [begin, end] : plan.outer_ranges) cover(begin, end);
      int64_t next_top = static_cast<int64_t>(layout.layer_ranges.size()) - 1;  // launch order: last layer first
      for (size_t b = 0; b < plan.buckets.size(); ++b) {
        const cuda::GradientBucket& bucket = plan.buckets[b];
        cover(bucket.begin, bucket.end);
        CHECK(bucket.end == layout.layer_ranges[static_cast<size_t>(next_top)].second);
        CHECK(bucket.begin == layout.layer_ranges[static_cast<size_t>(bucket.ready_after)].first);
        CHECK(bucket.ready_after <= next_top);
        if (b + 1 < plan.buckets.size()) CHECK((bucket.end - bucket.begin) * 4 >= bucket_bytes);
        next_top = bucket.ready_after - 1;
      }
      CHECK(next_top == -1);
      for (size_t i = 0; i < covered.size(); ++i) {
        if (covered[i] != 1) FAIL("element " << i << " is reduced " << covered[i] << " times");
      }
      for (const cuda::ParamView& v : layout.views) {  // embeddings and final norm only in the outer ranges
        if (v.layer >= 0) continue;
        bool outer = false;
        for (const auto& [begin, end] : plan.outer_ranges) outer = outer || (v.offset >= begin && v.offset + v.count() <= end);
        CHECK(outer);
      }
    }
  }
}

TEST_CASE("the norm runs of a shard hold exactly its counting tensors' elements, over shards the whole", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  const runtime::StageLayout stage = stage_layout(m, 2, 1, 2, 1, true);  // last stage, TP rank 1: replicated tensors do not count
  for (const int64_t shards : {1, 2, 4}) {
    const cuda::ParamLayout layout = host_layout(m, stage, shards);
    std::vector<bool> counts;
    for (const cuda::ParamView& v : layout.views) counts.push_back(cuda::counts_in_norm(v, 2, 1, 1));
    std::vector<int> covered(static_cast<size_t>(layout.padded_count), 0);
    for (int64_t r = 0; r < shards; ++r) {
      const auto [begin, end] = layout.shard(shards, r);
      for (const auto& [from, to] : cuda::norm_runs(layout.views, counts, begin, end)) {
        CHECK(0 <= from);
        CHECK(to <= end - begin);
        for (int64_t i = begin + from; i < begin + to; ++i) ++covered[static_cast<size_t>(i)];
      }
    }
    INFO(shards << " shards");
    for (size_t i = 0; i < layout.views.size(); ++i) {
      const cuda::ParamView& v = layout.views[i];
      int64_t hits = 0;
      for (int64_t e = v.offset; e < v.offset + v.count(); ++e) hits += covered[static_cast<size_t>(e)];
      INFO(v.name);
      CHECK(hits == (counts[i] ? v.count() : 0));
    }
    CHECK(*std::max_element(covered.begin(), covered.end()) <= 1);  // runs of different shards never overlap
  }
}

TEST_CASE("the global norm counts every parameter of the model once over a TP x PP grid", "[cuda_runtime]") {
  const ModelSpec m = resolve_model("gpt-tiny");
  cpu::StageModel whole(m, stage_layout(m, 1, 0, 1, 0, false), 3);
  int64_t total = 0;
  for (const runtime::Param& p : whole.params()) total += p.value.size();
  for (const auto& [tp, pp] : std::vector<std::pair<int64_t, int64_t>>{{2, 1}, {1, 2}, {2, 2}, {4, 3}}) {
    for (const bool sp : {false, true}) {
      int64_t counted = 0;
      for (int64_t pp_rank = 0; pp_rank < pp; ++pp_rank) {
        for (int64_t tp_rank = 0; tp_rank < tp; ++tp_rank) {
          for (const cuda::ParamView& v : host_layout(m, stage_layout(m, pp, pp_rank, tp, tp_rank, sp), 1).views) {
            if (cuda::counts_in_norm(v, pp, pp_rank, tp_rank)) counted += v.count();
          }
        }
      }
      INFO("tp " << tp << ", pp " << pp << (sp ? ", SP" : ""));
      CHECK(counted == total);
    }
  }
}

TEST_CASE("the device arena's peak is the largest sum of live buffers", "[cuda_runtime]") {
  if (!gpu_visible()) {
    WARN("no CUDA GPU: device arena test skipped");
    return;
  }
  cuda::DeviceArena arena;
  {
    cuda::DeviceBuffer<float> a(arena, 1000, "a");
    {
      cuda::DeviceBuffer<double> b(arena, 500, "b");
      CHECK(arena.current_bytes() == 8000);
    }
    cuda::DeviceBuffer<char> c(arena, 100, "c");
    CHECK(arena.current_bytes() == 4100);
  }
  CHECK(arena.current_bytes() == 0);
  CHECK(arena.peak_bytes() == 8000);
  arena.sample_device();
  CHECK(arena.device_total_bytes() > 0);
}

TEST_CASE("a GPU stage's tensors are 256-byte aligned, layers contiguous, padding a multiple of the shards", "[cuda_runtime]") {
  if (!gpu_visible()) {
    WARN("no CUDA GPU: parameter layout test skipped");
    return;
  }
  const ModelSpec m = resolve_model("gpt-tiny");
  const runtime::StageLayout layout = runtime::stage_layout(m, ParallelPlan{}, 0, 0);  // the whole model on one rank
  cpu::StageModel host(m, layout, 3);
  cuda::DeviceArena arena;
  cuda::ParamStore store(runtime::StageWeights{host.params(), {}}, layout, 4, arena, nullptr);
  CHECK(store.padded_count() % (4 * cuda::ParamStore::kAlignElements) == 0);
  CHECK(store.views().size() == host.params().size());
  CHECK(store.views().front().name == "wte");
  for (const cuda::ParamView& v : store.views()) CHECK(v.offset % cuda::ParamStore::kAlignElements == 0);
  REQUIRE(store.layer_count() == m.layers);
  for (int64_t l = 1; l < m.layers; ++l) CHECK(store.layer_range(l).first >= store.layer_range(l - 1).second);
  CHECK(arena.peak_bytes() >= static_cast<size_t>(store.padded_count()) * 6);  // bf16 weights + fp32 grads
}

}  // namespace
}  // namespace trainsim

#endif  // TRAINSIM_HAVE_CUDA_RUNTIME
