// Seconds of one pipeline step (a forward or a backward of one micro-batch on one virtual stage),
// split into compute and exposed TP communication, priced once per virtual stage from the
// lowered ops. Shared by the event simulator and the closed-form screen.
#pragma once

#include <vector>

#include "plan/lowering.hpp"
#include "sim/cost_model.hpp"

namespace trainsim {

// Gradient bucket of Megatron-LM's DDP (40M parameters).
inline constexpr double kDpBucketParams = 40e6;

struct StepCost {
  double compute_s = 0;
  double tp_s = 0;
  double host_idle_s = 0;  // the device waiting for the host to issue ops (CostModel::host_dispatch_s)
  double total() const { return compute_s + tp_s + host_idle_s; }
  StepCost& operator+=(const StepCost& o) {
    compute_s += o.compute_s;
    tp_s += o.tp_s;
    host_idle_s += o.host_idle_s;
    return *this;
  }
  StepCost scaled(double f) const { return {compute_s * f, tp_s * f, host_idle_s * f}; }
};

// The groups a layer's collectives run in: tensor parallel, context parallel (the KV ring),
// expert parallel (the MoE all-to-alls), the stage (FP8 amax), expert TP (the routed copies
// gathered over an expert's slices) and expert TP x EP (the all-gather dispatcher's tokens).
struct LayerScopes {
  GroupScope tp, cp, ep, stage, expert_tp, expert_tp_ep;
  LayerScopes(const GroupScope& tp_scope, const GroupScope& cp_scope = {}, const GroupScope& ep_scope = {},  // NOLINT
              const GroupScope& stage_scope = {}, const GroupScope& expert_tp_scope = {}, const GroupScope& expert_tp_ep_scope = {})
      : tp(tp_scope), cp(cp_scope), ep(ep_scope), stage(stage_scope), expert_tp(expert_tp_scope), expert_tp_ep(expert_tp_ep_scope) {}
  const GroupScope& of(GroupKind kind) const {
    switch (kind) {
      case GroupKind::kCp: return cp;
      case GroupKind::kEp: return ep;
      case GroupKind::kStage: return stage;
      case GroupKind::kExpertTp: return expert_tp;
      case GroupKind::kExpertTpEp: return expert_tp_ep;
      default: return tp;
    }
  }
};
LayerScopes layer_scopes(const ParallelPlan& plan, int64_t gpus_per_node);

// FP8's weight casts (read bf16, write the FP8 copies) for a stage's transformer layers, once per
// iteration on the first micro-batch; priced beside the optimizer step, the other once-per-
// iteration work of the stage (0 without FP8 or with FP8 primary weights).
double weight_cast_s(const CostModel& cost, const IterationWork& work, const StageWork& stage);

// Data-parallel collectives over a stage's parameters: the dense ones over dp x cp, the routed
// experts (under expert parallelism) over the ranks holding the same experts (rank_grid's expert_dp).
struct DpScopes {
  GroupScope dense, experts;
  double dense_ranks = 1, expert_ranks = 1;  // the ZeRO sharding degrees
  GroupScope replicas;                       // HSDP: the groups holding the same shard (size 1: none)
};
DpScopes dp_scopes(const ParallelPlan& plan, int64_t gpus_per_node);
// `params` of which `expert_params` routed experts, `bytes_per_param` each.
double dp_collective_s(const CostModel& cost, CollectiveKind kind, double params, double expert_params, double bytes_per_param,
                       const DpScopes& scopes);
// HSDP: the all-reduce of a rank's gradient shard across the shard groups (0 without replicas).
double replica_reduce_s(const CostModel& cost, double params, double expert_params, double bytes_per_param, const DpScopes& scopes);
// The parameters one rank updates with ZeRO-1+ (its shard), or all of them.
double optimizer_params(double params, double expert_params, int zero_stage, const DpScopes& scopes);

// The time a collective (`collective_s` alone) adds beside the op that hides it (`hiding_s`
// alone): its part the overlap cannot hide, plus the slowdown of the hiding op while the
// communication kernel holds `op.overlap_comm_sms` of the GPU's `sms` (Op's overlap fields).
double overlapped_collective_s(const Op& op, double collective_s, double hiding_s, int64_t sms);

// What the host spends issuing ops (sim/step_cost.cpp): per op by the stack that issues them
// (HostStack), per expert GEMM where Transformer Engine launches one per local expert, nothing for
// an op a CUDA graph captures (one graph launch per captured run of ops). All 0 where the cost
// model has no host time (a measured profile).
struct HostCost {
  double per_op_s = 0;
  double per_expert_launch_s = 0;
  double per_eager_op_s = 0, per_autograd_node_s = 0;  // Op::eager_ops in a forward / backward op
  CudaGraphs graphs = 0;
};
HostCost host_cost(const CostModel& cost, HostStack stack, CudaGraphs graphs);
// An op's host seconds under `host` (0 when a CUDA graph captures it).
double op_host_s(const Op& op, const HostCost& host);

// Sum over `ops`; a collective that overlaps another op counts only what overlapped_collective_s
// says. The device idles where issuing the ops takes the host longer than running them.
StepCost price_ops(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes, const HostCost& host);
// The same with PyTorch's host cost and no CUDA graphs.
StepCost price_ops(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes);

// [virtual stage * 2 + (backward ? 1 : 0)] for virtual stages 0 .. pp*chunks-1.
std::vector<StepCost> price_steps(const IterationWork& work, int64_t chunks, const CostModel& cost,
                                  const LayerScopes& scopes);

// The weight-gradient part (W) of each virtual stage's backward: its weight-gradient GEMMs
// ("*_wgrad"), which a Zero Bubble schedule runs as a pass of its own; [virtual stage].
std::vector<StepCost> price_weight_grad_steps(const IterationWork& work, int64_t chunks, const CostModel& cost,
                                              const LayerScopes& scopes);

}  // namespace trainsim
