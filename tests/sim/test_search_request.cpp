// A search request becomes search options: the framework's preset on every candidate, the checks
// that name the option, and the plan space's model-dependent choices (sim/search_request.hpp).
#include <catch2/catch.hpp>

#include "common/errors.hpp"
#include "model/model_catalog.hpp"
#include "sim/search_request.hpp"

using namespace trainsim;

namespace {
SearchRequest request(const std::string& framework = "") {
  SearchRequest r;
  r.gpus = 16;
  r.global_batch = 64;
  r.framework = framework;
  return r;
}
}  // namespace

TEST_CASE("torchtitan's search runs per-op checkpointing, PyTorch's loss and the eager norm unless compiled") {
  const SearchOptions eager = search_options_for(request("torchtitan"));
  CHECK(eager.space.selective == Recompute::kSelectiveOp);
  CHECK(eager.space.cross_entropy == LossKernel::kPytorch);
  CHECK(eager.space.norm == NormKernel::kEager);
  CHECK(eager.flash2_attention);
  SearchRequest compiled_request = request("torchtitan");
  compiled_request.compiled = true;
  const SearchOptions compiled = search_options_for(compiled_request);
  CHECK(compiled.space.cross_entropy == LossKernel::kCompiled);
  CHECK(compiled.space.norm == NormKernel::kFused);
}

TEST_CASE("without a framework the space keeps Megatron's kernels, NeMo's recipes also try TP communication overlap") {
  const SearchOptions plain = search_options_for(request());
  CHECK(plain.space.selective == Recompute::kSelective);
  CHECK(plain.space.cross_entropy == LossKernel::kFused);
  CHECK(plain.space.norm == NormKernel::kFused);
  CHECK_FALSE(plain.space.tp_comm_overlap);
  CHECK_FALSE(plain.flash2_attention);
  CHECK(search_options_for(request("nemo")).space.tp_comm_overlap);
  // Megatron-DeepSpeed's unfused attention is not forced on the search: --attention says which.
  CHECK(search_options_for(request("megatron-deepspeed")).space.attention == AttentionKernel::kFlash);
}

TEST_CASE("a request that cannot be searched is refused, naming the option") {
  SearchRequest no_gpus = request();
  no_gpus.gpus = 0;
  CHECK_THROWS_WITH(search_options_for(no_gpus), Catch::Contains("--gpus N"));
  SearchRequest compiled_alone = request();
  compiled_alone.compiled = true;
  CHECK_THROWS_WITH(search_options_for(compiled_alone), Catch::Contains("--compiled"));
  SearchRequest modules = request("torchtitan");
  modules.recompute_modules = "mlp";
  modules.recompute_modules_given = true;
  SearchOptions options = search_options_for(modules);
  CHECK_THROWS_WITH(set_space_choices(modules, resolve_model("llama3-8b"), options.space), Catch::Contains("checkpoints per op"));
}

TEST_CASE("a model with sliding windows searches CP with all_gather unless --cp-comm says otherwise") {
  const ModelSpec windowed = resolve_model("gpt-oss-20b");
  REQUIRE(windowed.windowed_layers() > 0);
  SearchRequest r = request();
  SearchOptions options = search_options_for(r);
  set_space_choices(r, windowed, options.space);
  CHECK(options.space.cp_comms == std::vector<CpComm>{CpComm::kAllGather});
  r.cp_comm_given = true;  // --cp-comm p2p
  CHECK_THROWS_AS(set_space_choices(r, windowed, options.space), InputError);
}

TEST_CASE("the GPU counts searched are powers of two that fill whole nodes above one node") {
  CHECK(searched_gpu_counts(24, 0, 8) == std::vector<int64_t>{24});
  CHECK(searched_gpu_counts(0, 40, 8) == std::vector<int64_t>{1, 2, 4, 8, 16, 32});
  CHECK(searched_gpu_counts(0, 16, 6) == std::vector<int64_t>{1, 2, 8, 16});
}
