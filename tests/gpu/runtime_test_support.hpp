// What the CUDA runtime's host-side tests share (tests/gpu/test_cuda_runtime.cpp, test_cuda_moe.cpp,
// test_cuda_context_parallel.cpp, test_cuda_vocab_parallel.cpp): check_cuda_plan's refusal as
// text, and a pipeline stage's layout and GPU parameter layout as the trainer builds them. None of
// it needs a GPU. Included by test files only, with the CUDA runtime (TRAINSIM_HAVE_CUDA_RUNTIME).
#pragma once

#include <cstdint>
#include <string>

#include "common/errors.hpp"
#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "runtime/cpu/cpu_model.hpp"
#include "runtime/cuda/cuda_trainer.hpp"
#include "runtime/cuda/param_store.hpp"

namespace trainsim::gpu_test {

// check_cuda_plan's problems, one a line; empty when it takes the plan.
inline std::string refusal(const ModelSpec& m, const ParallelPlan& p, int ranks) {
  try {
    cuda::check_cuda_plan(m, p, ranks);
  } catch (const InputError& e) {
    std::string all;
    for (const std::string& problem : e.problems()) all += problem + "\n";
    return all;
  }
  return "";
}

// The stage layout the trainer gives pipeline stage `pp_rank` of `pp` (layers split evenly, the
// first stage embedding, the last with the LM head) on TP rank `tp_rank` of `tp`.
inline runtime::StageLayout stage_layout(const ModelSpec& m, int64_t pp, int64_t pp_rank, int64_t tp = 1, int64_t tp_rank = 0,
                                         bool sp = false) {
  runtime::StageLayout layout;
  layout.chunks = {LayerRange{m.layers * pp_rank / pp, m.layers * (pp_rank + 1) / pp}};
  layout.embedding = pp_rank == 0;
  layout.head = pp_rank == pp - 1;
  layout.tp = tp;
  layout.tp_rank = tp_rank;
  layout.sequence_parallel = sp;
  return layout;
}

// The GPU parameter layout of the stage's model (seed 3) for `shards` ZeRO shards (ZeRO-3 units
// with `shard_units`), built on the host.
inline cuda::ParamLayout host_layout(const ModelSpec& m, const runtime::StageLayout& stage, int64_t shards, bool shard_units = false) {
  return cuda::layout_params(runtime::initial_stage_weights(m, stage, 3).params, stage, shards, shard_units);
}

}  // namespace trainsim::gpu_test
