// The CUDA runtime's vocabulary split (runtime/cuda/cuda_stage_vocab.cpp), the host side (runs
// without a GPU): what check_cuda_plan refuses, and the shapes the GPU stage's parameter store takes
// from the CPU model: on each TP rank wte and lm_head hold vocab / tp rows, the same on the first and
// last stage (the tied embedding's all-reduce between them). The kernels are
// tests/gpu/test_vocab_parallel_kernels.cpp; loss parity tests/runtime_gpu/parity.sh (tp 2 and 4 layouts).
#ifdef TRAINSIM_HAVE_CUDA_RUNTIME

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "model/model_catalog.hpp"
#include "runtime/cuda/param_store.hpp"
#include "tests/gpu/runtime_test_support.hpp"

namespace trainsim {
namespace {

using gpu_test::refusal;

// The views of stage pp_rank of pp on TP rank tp_rank of tp.
std::vector<cuda::ParamView> stage_views(const ModelSpec& m, int64_t pp, int64_t pp_rank, int64_t tp, int64_t tp_rank) {
  return gpu_test::host_layout(m, gpu_test::stage_layout(m, pp, pp_rank, tp, tp_rank), 1).views;
}

const cuda::ParamView* find_view(const std::vector<cuda::ParamView>& views, const std::string& name) {
  for (const cuda::ParamView& v : views) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the CUDA runtime refuses a vocabulary that tp does not divide, naming vocab, tp and Megatron's padding", "[cuda_runtime]") {
  ModelSpec m = resolve_model("gpt-tiny");
  m.vocab = 258;
  ParallelPlan p;
  p.tp = 4;
  const std::string message = refusal(m, p, 4);
  CHECK_THAT(message, Catch::Contains("vocab 258 is not divisible by tp 4"));
  CHECK_THAT(message, Catch::Contains("pads the vocabulary to a multiple of 128 x tp"));
  p.tp = 2;
  CHECK(refusal(m, p, 2).empty());
}

TEST_CASE("the CUDA runtime's stages hold vocab / tp rows of wte and lm_head on every TP rank, alike on the first and last stage",
          "[cuda_runtime]") {
  for (const bool tied : {true, false}) {
    ModelSpec m = resolve_model("gpt-tiny");
    m.tied_embeddings = tied;
    const std::string head = tied ? "wte" : "lm_head";
    for (const int64_t tp : {1, 2, 4}) {
      for (int64_t tp_rank = 0; tp_rank < tp; ++tp_rank) {
        INFO((tied ? "tied" : "untied") << ", tp " << tp << ", rank " << tp_rank);
        const auto first = stage_views(m, 2, 0, tp, tp_rank), last = stage_views(m, 2, 1, tp, tp_rank);
        const cuda::ParamView* embedding = find_view(first, "wte");
        const cuda::ParamView* lm_head = find_view(last, head);
        REQUIRE(embedding != nullptr);
        REQUIRE(lm_head != nullptr);
        CHECK(embedding->count() == m.vocab / tp * m.hidden);
        CHECK(lm_head->count() == m.vocab / tp * m.hidden);  // tied: the all-reduce between the stages pairs equal shards
        CHECK(embedding->tp_split == (tp > 1));
        CHECK(lm_head->tp_split == (tp > 1));
        CHECK_FALSE(embedding->sp_partial);
      }
    }
  }
}

}  // namespace trainsim

#endif  // TRAINSIM_HAVE_CUDA_RUNTIME
