// The space `trainsim search` explores: every plan dp x tp x pp x vpp x micro-batch x ZeRO stage x
// recompute x sequence parallelism (x CP exchange x MoE dispatcher x Zero Bubble schedule where asked) for a model on a
// GPU count, with the constraints Megatron-LM
// and DeepSpeed impose (tp divides heads, KV heads and FFN; pp divides layers; ZeRO-2/3 only
// without pipeline parallelism; interleaving needs m % pp == 0). Candidates come out in a fixed
// order, so searches are reproducible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/framework_support.hpp"
#include "plan/parallel_plan.hpp"

namespace trainsim {

struct PlanSpaceOptions {
  int64_t gpus = 1;
  int64_t gpus_per_node = 8;
  int64_t global_batch = 1;
  int64_t max_micro_batch = 16;
  int64_t max_vpp = 8;
  bool tp_across_nodes = false;  // allow tp > gpus_per_node
  // Also pipelines (pp, and pp x vpp) that split the layers only with the embedding and the loss
  // counted as a layer each (Megatron-Core's --account-for-embedding/loss-in-pipeline-split): Llama
  // 3.1 405B's 126 layers at PP 8 or 16, as NVIDIA's recipes run it (search --no-uneven-pipeline
  // leaves them out: the deep pipelines they add cost the simulator up to ~60 ms each).
  bool uneven_pipeline = true;
  // Context parallelism: up to max_cp ranks, each keeping at least min_cp_tokens of the sequence
  // (bounds of the search space, not costs: they keep it to the sizes teams run).
  int64_t max_cp = 16;
  int64_t min_cp_tokens = 4096;
  Precision precision = Precision::kBf16;
  AttentionKernel attention = AttentionKernel::kFlash;
  // The framework's selective recomputation (Megatron's attention core, or torchtitan's per-op
  // checkpointing) and loss kernel (FrameworkPreset).
  Recompute selective = Recompute::kSelective;
  LossKernel cross_entropy = LossKernel::kFused;
  NormKernel norm = NormKernel::kFused;
  Zero3Collectives zero3_collectives = Zero3Collectives::kPerLayer;  // the framework's ZeRO-3 (FrameworkPreset)
  ZeroEngine zero_engine = ZeroEngine::kMegatron;                    // the framework's ZeRO (FrameworkPreset)
  // Who issues the ops (the framework's, FrameworkPreset) and what CUDA graphs capture (search
  // --cuda-graphs): every candidate's.
  HostStack host_stack = HostStack::kTransformerEngine;
  CudaGraphs cuda_graphs = 0;
  int64_t lora_rank = 0;     // search --lora-rank: every candidate's (ParallelPlan::lora_rank)
  bool te_op_fuser = false;  // search --te-op-fuser: every candidate's (ParallelPlan::te_op_fuser)
  // The framework can overlap TP communication with the GEMMs (Megatron-Core's --tp-comm-overlap,
  // torchtitan's async TP): every plan with SP is also tried with tp_comm_overlap.
  bool tp_comm_overlap = false;
  // Every MoE plan with expert parallelism that allows it is also tried with its token exchange
  // hidden under another micro-batch (ep_comm_overlap: Megatron-Core's combined 1F1B).
  bool ep_comm_overlap = false;
  // How CP ranks share K and V (search --cp-comm): every plan with cp > 1 is tried with each,
  // where the model allows it (no p2p ring with sliding windows; a2a splits heads over CP).
  std::vector<CpComm> cp_comms = {CpComm::kP2p};
  // MoE token dispatchers (search --moe-dispatcher): every plan whose experts are apart from the
  // dense TP split is tried with each (flex only with ep > 1 and expert TP 1, what it prices).
  std::vector<MoeDispatcher> moe_dispatchers = {MoeDispatcher::kAllToAll};
  // Megatron-Core's recompute modules (search --recompute-modules): when not the default, every
  // plan is also tried with selective recomputation of these modules.
  RecomputeModules selective_modules = kDefaultRecomputeModules;
  // Partial full recomputation (search --recompute-method / --recompute-num-layers): tried besides
  // none, selective and full when not uniform 1; a block of 0 (none) or of every layer of each
  // chunk (full) is not tried twice.
  RecomputeMethod partial_recompute_method = RecomputeMethod::kUniform;
  int64_t partial_recompute_layers = 1;
  // Zero Bubble schedules (search --zero-bubble): every plan with a pipeline is also tried with
  // each (zb-v with its two chunks per rank, where the layers split over them).
  std::vector<Schedule> zero_bubble;
  // The frameworks that must run every plan ranked (--framework, --from, --export): a candidate one
  // of them cannot run is left out, with the reason (plan/framework_support.hpp).
  std::vector<FrameworkFamily> frameworks;
};

// Calls `visit` for every candidate; returns how many there were.
int64_t enumerate_plans(const ModelSpec& model, const PlanSpaceOptions& options,
                        const std::function<void(const ParallelPlan&)>& visit);

// The pipeline sizes (pp > 1 dividing the GPUs) left out because only the layers + 2 split over
// them and uneven_pipeline is off, as one line for `search` to print; "" when there are none.
std::string uneven_pipelines_not_searched(const ModelSpec& model, const PlanSpaceOptions& options);

// The Zero Bubble schedules asked for that no candidate runs, each with the reason (no pipeline
// size divides the GPUs and the layers; for zb-v, none splits the layers into two chunks per rank),
// so that `search` says so rather than ranking without them.
std::vector<std::string> zero_bubble_not_searched(const ModelSpec& model, const PlanSpaceOptions& options);

// All candidates in a vector (for multi-threaded screening).
std::vector<ParallelPlan> list_plans(const ModelSpec& model, const PlanSpaceOptions& options);

}  // namespace trainsim
