// Step pricing.
#include "sim/step_cost.hpp"

#include <algorithm>
#include <string>

namespace trainsim {

LayerScopes layer_scopes(const ParallelPlan& plan, int64_t gpus_per_node) {
  return {group_scope(plan, GroupKind::kTp, gpus_per_node), group_scope(plan, GroupKind::kCp, gpus_per_node),
          group_scope(plan, GroupKind::kEp, gpus_per_node), group_scope(plan, GroupKind::kStage, gpus_per_node),
          group_scope(plan, GroupKind::kExpertTp, gpus_per_node), group_scope(plan, GroupKind::kExpertTpEp, gpus_per_node)};
}

double weight_cast_s(const CostModel& cost, const IterationWork& work, const StageWork& stage) {
  if (work.weight_cast_bytes_per_param <= 0 || stage.layers <= 0) return 0.0;
  const double layer_params = stage.params_per_layer * static_cast<double>(stage.layers);
  const double transpose = cost.fp8_gemm_any_layout() ? work.weight_cast_tn_bytes_per_param : 0.0;
  return cost.memory_bound_s(layer_params * (work.weight_cast_bytes_per_param - transpose));
}

DpScopes dp_scopes(const ParallelPlan& plan, int64_t gpus_per_node) {
  DpScopes s;
  const bool hsdp = plan.shard_replicas() > 1;
  s.dense = group_scope(plan, hsdp ? GroupKind::kDpShard : GroupKind::kDpCp, gpus_per_node);
  s.experts = group_scope(plan, GroupKind::kExpertDp, gpus_per_node);
  s.dense_ranks = static_cast<double>(plan.shard_ranks());
  if (hsdp) s.replicas = group_scope(plan, GroupKind::kDpReplicate, gpus_per_node);
  s.expert_ranks = static_cast<double>(expert_dp(plan));
  return s;
}

double dp_collective_s(const CostModel& cost, CollectiveKind kind, double params, double expert_params, double bytes_per_param,
                       const DpScopes& scopes) {
  const double dense = params - expert_params;
  double t = dense > 0 ? cost.collective_s(kind, dense * bytes_per_param, scopes.dense) : 0.0;
  if (expert_params > 0 && scopes.experts.size > 1) t += cost.collective_s(kind, expert_params * bytes_per_param, scopes.experts);
  return t;
}

double replica_reduce_s(const CostModel& cost, double params, double expert_params, double bytes_per_param, const DpScopes& scopes) {
  if (scopes.replicas.size <= 1) return 0.0;
  return cost.collective_s(CollectiveKind::kAllReduce, (params - expert_params) / scopes.dense_ranks * bytes_per_param, scopes.replicas);
}

double optimizer_params(double params, double expert_params, int zero_stage, const DpScopes& scopes) {
  if (zero_stage < 1) return params;
  return (params - expert_params) / scopes.dense_ranks + expert_params / scopes.expert_ranks;
}

// Compute kernels run 18.9% slower (mean; max 40%) while communication overlaps them, measured
// on 4 x A100 and 4 x H100 training GPT and LLaMA models (arXiv 2507.03114; shared/reference/
// microbench.md section 6, beside nccl #1428's 1.76-2.5x for single kernels next to an
// all-gather). Not applied to the data-parallel overlap (sim/screen.cpp, sim/simulator.cpp).
constexpr double kOverlapComputeSlowdown = 0.189;

double overlapped_collective_s(const Op& op, double collective_s, double hiding_s, int64_t sms) {
  // A GEMM given sms - comm of the SMs runs sms / (sms - comm) times as long (Transformer
  // Engine launches the overlapped GEMM with that math SM count for its whole run).
  const int64_t comm = op.overlap_comm_sms;
  const double stretch = comm > 0 && sms > comm ? static_cast<double>(sms) / static_cast<double>(sms - comm) : 1.0;
  const double hiding_stretched_s = hiding_s * stretch;
  // While both run they share HBM (and the communication kernel its SMs): the hiding op is
  // kOverlapComputeSlowdown slower for the time they overlap.
  const double overlapped_s = std::min(collective_s, op.overlap_hideable_fraction * hiding_stretched_s);
  return kOverlapComputeSlowdown * overlapped_s + (hiding_stretched_s - hiding_s) + std::max(op.overlap_exposed_fraction * collective_s,
                                                    collective_s - op.overlap_hideable_fraction * hiding_stretched_s);
}

// Host seconds per op of Transformer Engine's stack (HostStack::kTransformerEngine): measured on
// the DeepSeek-V3 H800 training step (shared/traces/deepseek-v3-h800-train-step.json.gz, an eager
// FP8 MoE stack): its 4 layers' CPU ranges attn, mlp and combine (F, B, W) and dispatch (B) span
// 42.48 ms (bench/deepseek_v3_trace_check.py; dispatch(F), 67.8 ms, is the host waiting on
// DeepEP's receive counts, left out) for the 4 x 81 ops trainsim lowers those layers to (34
// forward, 44 backward, 3 recomputed: the bench's plan): 131 us per op. PyTorch's stack keeps
// EfficiencyConstants::host_dispatch_s (72.3 us, fitted on vTrain's Megatron-DeepSpeed runs).
constexpr double kTransformerEngineHostPerOpS = 42.48e-3 / (4.0 * 81.0);
// Host seconds per expert GEMM of a grouped linear in Transformer Engine's multi-stream cuBLAS
// path: 8 experts of 128 tokens (N = K = 2048) take 0.267 ms there against 0.069 ms as one
// CUTLASS grouped kernel (NVIDIA/TransformerEngine#3134, SM100, benchmark_grouped_linear.py,
// "pure" rows: the GEMMs alone): 0.267 / 8 = 33 us per expert GEMM, the math a few us of it.
constexpr double kExpertGemmLaunchS = 0.267e-3 / 8.0;

// Host seconds of one eager PyTorch op and one autograd node that a framework issues from a Python
// loop (Op::eager_ops): the median CPU spans of aten::mul and aten::add (8.50 and 8.97 us) on an
// H100 host (shared/traces/h100-qwen1.5-0.5b-forward.json.gz) and of MulBackward0's autograd node
// (24.5 us) on an A100-SXM4-80GB host (shared/traces/a100-16rank-recsys-rank0.json.gz);
// bench/eager_host_check.py prints them. Measured under the profiler; Python's own time between
// ops is not in them.
constexpr double kEagerOpHostS = (8.50e-6 + 8.97e-6) / 2.0;
constexpr double kAutogradNodeHostS = 24.5e-6;

HostCost host_cost(const CostModel& cost, HostStack stack, CudaGraphs graphs) {
  HostCost host;
  if (cost.host_dispatch_s() <= 0) return host;
  host.per_op_s = stack == HostStack::kTransformerEngine ? kTransformerEngineHostPerOpS : cost.host_dispatch_s();
  host.per_expert_launch_s = stack == HostStack::kTransformerEngine ? kExpertGemmLaunchS : 0.0;
  host.per_eager_op_s = kEagerOpHostS;
  host.per_autograd_node_s = kAutogradNodeHostS;
  host.graphs = graphs;
  return host;
}

namespace {
bool captured(const Op& op, CudaGraphs graphs) {
  if ((graphs & kGraphFullIteration) != 0) return true;
  if (op.graph_scope == 0) return false;
  return (graphs & kGraphLayer) != 0 || (graphs & op.graph_scope) != 0 ||
         ((graphs & kGraphMoe) != 0 && op.graph_scope == kGraphMoeRouter);  // the MoE block holds its router
}

// An op's host seconds when the host issues it (not captured).
double issued_host_s(const Op& op, const HostCost& host) {
  return host.per_op_s + static_cast<double>(op.expert_launches) * host.per_expert_launch_s +
         static_cast<double>(op.eager_ops) * (op.backward ? host.per_autograd_node_s : host.per_eager_op_s);
}
}  // namespace

double op_host_s(const Op& op, const HostCost& host) {
  if (captured(op, host.graphs)) return 0.0;
  return issued_host_s(op, host);
}

StepCost price_ops(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes) {
  return price_ops(ops, cost, scopes, host_cost(cost, HostStack::kPytorch, 0));
}

namespace {
// `ops` with the host synchronising before its first op.
std::vector<Op> synced_first(std::vector<Op> ops) {
  if (!ops.empty()) ops.front().host_sync = true;
  return ops;
}

// The device's time against the host's issue over an op list that repeats (layers, micro-batches).
// Without a host synchronisation the two are compared in total: the host's lead carries from one
// repetition to the next, so the device idles only for what issuing takes beyond running. With
// one, the state at the synchronisation repeats (the host waits there until the device has drained):
// from it, round the list back to it, each op starts when the host has issued it and the device
// has finished the op before, and the host waits again at every synchronisation.
class HostTimeline {
 public:
  // The steps go to a buffer each thread reuses: a search prices ops for every plan it screens.
  HostTimeline() : ops_(buffer()) { ops_.clear(); }
  void add(double device_s, double host_s, bool sync) {
    ops_.push_back({device_s, host_s, sync});
    device_total_ += device_s;
    host_total_ += host_s;
    if (sync && first_sync_ < 0) first_sync_ = static_cast<int64_t>(ops_.size()) - 1;
  }
  double idle_s() const {
    if (first_sync_ < 0) return std::max(0.0, host_total_ - device_total_);
    double host = 0, end = 0;
    const size_t n = ops_.size();
    for (size_t k = 0; k < n; ++k) {
      const Step& op = ops_[(static_cast<size_t>(first_sync_) + k) % n];
      if (op.sync) host = std::max(host, end);
      host += op.host_s;
      end = std::max(host, end) + op.device_s;
    }
    return std::max(0.0, std::max(host, end) - device_total_);
  }

 private:
  struct Step {
    double device_s, host_s;
    bool sync;
  };
  static std::vector<Step>& buffer() {
    thread_local std::vector<Step> steps;
    return steps;
  }
  std::vector<Step>& ops_;
  double device_total_ = 0, host_total_ = 0;
  int64_t first_sync_ = -1;
};
}  // namespace

StepCost price_ops(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes, const HostCost& host) {
  StepCost c;
  // The host issues every op in turn; when issuing takes longer than the device runs them (small
  // ops), the device idles for the difference. The op list repeats (layers, micro-batches), so
  // over it the device's time is the longer of the two, up to a host synchronisation (Op::host_sync;
  // HostTimeline above). A run of captured ops is one graph launch.
  HostTimeline timeline;
  bool in_graph = false;
  for (const Op& op : ops) {
    double t = cost.op_s(op, scopes.of(op.group));
    if (op.kind == OpKind::kCollective && op.overlaps_op >= 0) {
      const Op& hidden_by = ops[static_cast<size_t>(op.overlaps_op)];
      t = overlapped_collective_s(op, t, cost.op_s(hidden_by, scopes.of(hidden_by.group)), cost.sm_count());
    }
    (op.kind == OpKind::kCollective ? c.tp_s : c.compute_s) += t;
    double h = 0;
    if (host.graphs == 0) {
      h = issued_host_s(op, host);
    } else {
      const bool graph = captured(op, host.graphs);
      if (graph && !in_graph) h += host.per_op_s;
      in_graph = graph;
      if (!graph) h += issued_host_s(op, host);
    }
    timeline.add(t, h, op.host_sync && !(host.graphs != 0 && captured(op, host.graphs)));
  }
  c.host_idle_s = timeline.idle_s();
  return c;
}

namespace {

// Two op lists the host issues one after the other, priced as one (the device idles only where
// issuing both takes longer than running both). Neither list's ops overlap the other's.
StepCost price_ops_in_row(const std::vector<Op>& first, const std::vector<Op>& second, const CostModel& cost,
                          const LayerScopes& scopes, const HostCost& host) {
  StepCost c = price_ops(first, cost, scopes, host), d = price_ops(second, cost, scopes, host);
  c.compute_s += d.compute_s;
  c.tp_s += d.tp_s;
  c.host_idle_s = 0.0;
  double issue_s = 0;
  for (const std::vector<Op>* ops : {&first, &second}) {
    for (const Op& op : *ops) issue_s += op_host_s(op, host);
  }
  c.host_idle_s = std::max(0.0, issue_s - c.total());
  return c;
}

bool is_moe_exchange(const Op& op) {
  return op.kind == OpKind::kCollective && (op.group == GroupKind::kEp || op.group == GroupKind::kExpertTp);
}

// A layer pass cut at its MoE token exchange (the EP all-to-alls, flex's included, and the
// expert-TP gathers around them), each op priced alone: the work before the dispatch and after the
// combine (`outer`: attention, router, permutation, shared experts), the dispatch's exchange, the
// experts' GEMMs between, and the combine's exchange. The backward's list is in the forward's
// order: its first exchange is the dispatch's backward, its last the combine's.
struct MoePass {
  double outer = 0, first_exchange = 0, experts = 0, last_exchange = 0;
  double total() const { return outer + first_exchange + experts + last_exchange; }
};

MoePass cut_at_exchange(const std::vector<Op>& ops, const CostModel& cost, const LayerScopes& scopes) {
  MoePass pass;
  int part = 0;  // 0: before the dispatch, 1: its exchange, 2: experts, 3: the combine's, 4: after
  for (const Op& op : ops) {
    const bool exchange = is_moe_exchange(op);
    if (exchange && (part == 0 || part == 2)) ++part;
    if (!exchange && (part == 1 || part == 3)) ++part;
    double t = cost.op_s(op, scopes.of(op.group));
    if (op.kind == OpKind::kCollective && op.overlaps_op >= 0) {
      const Op& hiding = ops[static_cast<size_t>(op.overlaps_op)];
      t = overlapped_collective_s(op, t, cost.op_s(hiding, scopes.of(hiding.group)), cost.sm_count());
    }
    (part == 1 ? pass.first_exchange : part == 2 ? pass.experts : part == 3 ? pass.last_exchange : pass.outer) += t;
  }
  return pass;
}

// One slot of the combined schedule: a communication stream beside a compute stream, the compute
// kOverlapComputeSlowdown slower for the time they overlap.
double slot_s(double communication, double compute) {
  return std::max(communication, compute) + kOverlapComputeSlowdown * std::min(communication, compute);
}

// Megatron-Core's combined 1F1B (ep_comm_overlap): in the steady state one micro-batch's forward
// runs beside another's backward, layer by layer, a communication stream beside the compute one
// (megatron/core/models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run):
//   communication: combine backward    | dispatch forward, dispatch backward | combine forward
//   compute:       forward before it   | experts backward, experts forward   | backward before it
// The pair's saving over running the two passes alone comes off their exposed communication,
// shared in proportion to each pass's exchange, times the share of passes that run paired
// (IterationWork::ep_overlap_paired_share: not the warm-up's forwards nor the cool-down's
// backwards), spread over every step.
void hide_moe_exchange(const IterationWork& work, const CostModel& cost, const LayerScopes& scopes, StepCost& forward,
                       StepCost& backward, StepCost& backward_alone) {
  MoePass f = cut_at_exchange(work.layer.forward, cost, scopes);
  MoePass b = cut_at_exchange(work.layer.backward, cost, scopes);
  b.outer += cut_at_exchange(work.layer.recompute, cost, scopes).total();  // recomputation runs before the backward
  const double pair = slot_s(b.last_exchange, f.outer) + slot_s(f.first_exchange + b.first_exchange, b.experts + f.experts) +
                      slot_s(f.last_exchange, b.outer);
  const double saving = std::max(0.0, f.total() + b.total() - pair) * work.ep_overlap_paired_share;
  const double f_exchange = f.first_exchange + f.last_exchange, b_exchange = b.first_exchange + b.last_exchange;
  if (f_exchange + b_exchange <= 0) return;
  forward.tp_s -= saving * f_exchange / (f_exchange + b_exchange);
  backward.tp_s -= saving * b_exchange / (f_exchange + b_exchange);
  backward_alone.tp_s -= saving * b_exchange / (f_exchange + b_exchange);
}

}  // namespace

std::vector<StepCost> price_steps(const IterationWork& work, int64_t chunks, const CostModel& cost,
                                  const LayerScopes& scopes) {
  const int64_t stages = static_cast<int64_t>(work.stages.size());
  const int64_t virtual_stages = stages * chunks;
  const HostCost host = host_cost(cost, work.host_stack, work.cuda_graphs);
  StepCost layer_forward = price_ops(work.layer.forward, cost, scopes, host);
  StepCost layer_backward_alone = price_ops(work.layer.backward, cost, scopes, host);
  StepCost layer_backward = layer_backward_alone;  // with the layer's recomputation before it
  layer_backward += price_ops(work.layer.recompute, cost, scopes, host);
  // A pipeline step that starts with a host synchronisation (IterationWork::step_host_sync): its
  // first layer's ops are issued without the host's lead, what that adds over a layer in the run.
  StepCost step_forward_sync, step_backward_sync;
  if (work.step_host_sync && !work.layer.forward.empty()) {
    step_forward_sync.host_idle_s = price_ops(synced_first(work.layer.forward), cost, scopes, host).host_idle_s - layer_forward.host_idle_s;
    const bool recompute_first = !work.layer.recompute.empty();
    const StepCost first = recompute_first ? price_ops(synced_first(work.layer.recompute), cost, scopes, host)
                                           : price_ops(synced_first(work.layer.backward), cost, scopes, host);
    const StepCost alone = recompute_first ? price_ops(work.layer.recompute, cost, scopes, host) : layer_backward_alone;
    step_backward_sync.host_idle_s = first.host_idle_s - alone.host_idle_s;
  }
  if (work.ep_overlap_paired_share > 0) hide_moe_exchange(work, cost, scopes, layer_forward, layer_backward, layer_backward_alone);
  // An MoE model's dense first layers: their own ops, nothing to exchange (so nothing to hide).
  const bool dense_apart = !work.dense_layer.forward.empty();
  const StepCost dense_forward = dense_apart ? price_ops(work.dense_layer.forward, cost, scopes, host) : StepCost{};
  const StepCost dense_backward_alone = dense_apart ? price_ops(work.dense_layer.backward, cost, scopes, host) : StepCost{};
  StepCost dense_backward = dense_backward_alone;
  if (dense_apart) dense_backward += price_ops(work.dense_layer.recompute, cost, scopes, host);
  const StepCost chunk_forward = price_ops(work.chunk_forward, cost, scopes, host);
  const StepCost chunk_backward = price_ops(work.chunk_backward, cost, scopes, host);
  std::vector<StepCost> out;
  out.reserve(static_cast<size_t>(virtual_stages * 2));
  for (int64_t vs = 0; vs < virtual_stages; ++vs) {
    const ChunkPlace place = place_of_virtual_stage(work.v_placement, stages, vs);
    const StageWork& w = work.stages[static_cast<size_t>(place.stage)];
    const size_t chunk = static_cast<size_t>(place.chunk);
    const int64_t recomputed = w.chunk_recomputed_layers[chunk];
    const double layers = static_cast<double>(w.chunk_layers[chunk]);
    // Block recompute runs the recomputation of the chunk's first N layers only; the dense first
    // layers open the model, so they are the first of their chunks.
    const int64_t dense = dense_apart ? w.chunk_dense_layers[chunk] : 0, dense_recomputed = std::min(dense, recomputed);
    StepCost forward = layer_forward.scaled(layers - static_cast<double>(dense));
    StepCost backward = layer_backward.scaled(static_cast<double>(recomputed - dense_recomputed));
    backward += layer_backward_alone.scaled(static_cast<double>(w.chunk_layers[chunk] - recomputed - (dense - dense_recomputed)));
    if (dense > 0) {
      forward += dense_forward.scaled(static_cast<double>(dense));
      backward += dense_backward.scaled(static_cast<double>(dense_recomputed));
      backward += dense_backward_alone.scaled(static_cast<double>(dense - dense_recomputed));
    }
    if (layers > 0) {
      forward += chunk_forward;
      backward += chunk_backward;
      forward += step_forward_sync;
      backward += step_backward_sync;
    }
    if (work.offloaded_layers > 0) {
      // Each offloaded layer's copy to the host runs beside the next layer's forward, its copy back
      // beside the backward of the layer after it: only what is longer shows (pp 1: one chunk).
      const double n = static_cast<double>(std::min<int64_t>(work.offloaded_layers, w.chunk_layers[chunk]));
      forward.compute_s += n * std::max(0.0, work.offload_copy_s - layer_forward.total());
      backward.compute_s += n * std::max(0.0, work.offload_copy_s - layer_backward_alone.total());
    }
    if (vs == 0 && vs == virtual_stages - 1) {
      // Without a pipeline the host issues the embedding's and the head's ops in a row.
      forward += price_ops_in_row(w.embedding_forward, w.head_forward, cost, scopes, host);
      backward += price_ops_in_row(w.embedding_backward, w.head_backward, cost, scopes, host);
    } else if (vs == 0) {
      forward += price_ops(w.embedding_forward, cost, scopes, host);
      backward += price_ops(w.embedding_backward, cost, scopes, host);
    } else if (vs == virtual_stages - 1) {
      forward += price_ops(w.head_forward, cost, scopes, host);
      backward += price_ops(w.head_backward, cost, scopes, host);
    }
    out.push_back(forward);
    out.push_back(backward);
  }
  return out;
}

namespace {
std::vector<Op> weight_grad_ops(const std::vector<Op>& ops) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    const std::string name = op.name;
    if (op.kind == OpKind::kGemm && name.size() > 6 && name.compare(name.size() - 6, 6, "_wgrad") == 0) out.push_back(op);
  }
  return out;
}
}  // namespace

std::vector<StepCost> price_weight_grad_steps(const IterationWork& work, int64_t chunks, const CostModel& cost,
                                              const LayerScopes& scopes) {
  const int64_t stages = static_cast<int64_t>(work.stages.size());
  const int64_t virtual_stages = stages * chunks;
  StepCost layer = price_ops(weight_grad_ops(work.layer.backward), cost, scopes);
  layer.host_idle_s = 0.0;  // W's ops are issued within the backward's stream of ops
  StepCost dense_layer = price_ops(weight_grad_ops(work.dense_layer.backward), cost, scopes);
  dense_layer.host_idle_s = 0.0;
  std::vector<StepCost> out;
  out.reserve(static_cast<size_t>(virtual_stages));
  for (int64_t vs = 0; vs < virtual_stages; ++vs) {
    const ChunkPlace place = place_of_virtual_stage(work.v_placement, stages, vs);
    const StageWork& w = work.stages[static_cast<size_t>(place.stage)];
    const size_t chunk = static_cast<size_t>(place.chunk);
    const int64_t dense = work.dense_layer.backward.empty() ? 0 : w.chunk_dense_layers[chunk];
    StepCost step = layer.scaled(static_cast<double>(w.chunk_layers[chunk] - dense));
    if (dense > 0) step += dense_layer.scaled(static_cast<double>(dense));
    if (vs == virtual_stages - 1) {
      StepCost head = price_ops(weight_grad_ops(w.head_backward), cost, scopes);
      head.host_idle_s = 0.0;
      step += head;
    }
    out.push_back(step);
  }
  return out;
}

}  // namespace trainsim
