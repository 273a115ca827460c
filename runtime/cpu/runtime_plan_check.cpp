// What the CPU runtime can run: the plan checks `run` makes before it starts (every limit named
// with its plan key and a way out), and the host-memory check that refuses a plan which certainly
// does not fit rather than meet the OOM killer minutes in. Declared in runtime/cpu/trainer.hpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "common/errors.hpp"
#include "common/problem_list.hpp"
#include "common/units.hpp"
#include "plan/rank_memory.hpp"
#include "runtime/cpu/cpu_model.hpp"
#include "runtime/cpu/trainer.hpp"

namespace trainsim::cpu {

void check_runtime_plan(const ModelSpec& m, const ParallelPlan& p, int world_size) {
  ProblemList problems = runtime::model_problems(m);
  if (p.gpus() != world_size) {
    problems.add("plan: dp x tp x pp x cp = " + std::to_string(p.gpus()) + " ranks, but mpirun started " +
                 std::to_string(world_size) + " (run under `mpirun -np " + std::to_string(p.gpus()) + "`)");
  }
  // Tokens are bytes (ids 0-255); a larger vocabulary costs what it costs in training (embedding,
  // LM head, cross-entropy over every id), only ids from 256 up never occur in the data.
  if (m.vocab < 256) problems.add("model \"" + m.name + "\": vocab " + std::to_string(m.vocab) + " < 256 (the runtime feeds byte tokens 0-255)");
  if (p.precision != Precision::kFp32) problems.add(std::string("plan: precision ") + to_string(p.precision) + " (the CPU runtime trains in fp32: --precision fp32)");
  if (m.moe && p.ep > 1 && p.tp > 1 && !p.sequence_parallel) {
    problems.add("plan: ep " + std::to_string(p.ep) + " with tp " + std::to_string(p.tp) +
                 " without sequence_parallel: the runtime's TP ranks route their own sequence shards over the EP group, as Megatron-Core "
                 "(which requires SP for MoE with TP); add --sequence-parallel, or leave ep at 1 to split the experts over TP");
  }
  if (p.cuda_graphs != 0) {
    problems.add("plan: cuda_graphs " + cuda_graphs_text(p.cuda_graphs) + ": the runtime issues every op from the host, no CUDA graph (leave --cuda-graphs out)");
  }
  if (p.cpu_offload_layers > 0) {
    problems.add("plan: cpu_offload_layers " + std::to_string(p.cpu_offload_layers) + ": the runtime keeps every activation in memory (leave --cpu-offload-layers out)");
  }
  if (p.lora_rank > 0) {
    problems.add("plan: lora_rank " + std::to_string(p.lora_rank) + ": the runtime trains every weight, it has no LoRA adapters (leave --lora-rank out)");
  }
  if (p.tp_comm_overlap) {
    problems.add("plan: tp_comm_overlap: the runtime runs its TP collectives between the GEMMs, not beside them (leave --tp-comm-overlap out)");
  }
  if (m.moe && p.expert_tp > 0 && p.expert_tp != (p.ep > 1 ? 1 : p.tp)) {
    problems.add("plan: expert_tp " + std::to_string(p.expert_tp) + ": the runtime runs whole experts with ep > 1 and the experts split over TP with ep 1 (expert_tp " +
                 std::to_string(p.ep > 1 ? 1 : p.tp) + " for this plan; leave it out)");
  }
  if (m.moe && p.moe_dispatcher == MoeDispatcher::kFlex && !p.experts_like_dense()) {
    problems.add("plan: moe_dispatcher flex: DeepEP / HybridEP are GPU kernels; the CPU runtime runs the all-to-all and the all-gather dispatchers (moe_dispatcher alltoall or allgather)");
  }
  if (p.moe_imbalance != 1.0 || p.moe_capacity_factor > 0) {
    problems.add("plan: moe_imbalance / moe_capacity_factor: the runtime routes with its own router, dropless (leave them out: its load is what it measures)");
  }
  if (p.cp > 1 && p.cp_comm != CpComm::kP2p) {
    problems.add(std::string("plan: cp_comm ") + to_string(p.cp_comm) + ": the runtime's context parallelism is a ring (cp_comm p2p)");
  }
  if (p.dp_shard > 0) problems.add("plan: dp_shard " + std::to_string(p.dp_shard) + ": HSDP is not implemented by the runtime (ZeRO shards over every dp x cp rank)");
  if (is_zero_bubble(p.schedule)) {
    problems.add(std::string("plan: schedule ") + to_string(p.schedule) + " (Zero Bubble) is not implemented by the runtime (gpipe, 1f1b or interleaved)");
  }
  if (p.vpp > 1 && (m.layers % (p.pp * p.vpp) != 0 || p.first_stage_layers > 0 || p.last_stage_layers > 0 || !p.pipeline_layout.empty())) {
    problems.add("plan: pp x vpp (" + std::to_string(p.pp * p.vpp) + ") must divide the layers (" + std::to_string(m.layers) +
                 ") evenly for the runtime's interleaved schedule (no first/last-stage counts)");
  }
  const std::vector<int64_t> stage_layers = virtual_stage_layers(m, p);
  if (std::find(stage_layers.begin(), stage_layers.end(), 0) != stage_layers.end()) {
    problems.add("plan: a pipeline stage with no transformer layer (the embedding or loss alone) is not run by the runtime");
  }
  if (p.norm != NormKernel::kFused || p.cross_entropy != LossKernel::kFused) {
    problems.add("plan: norm eager / cross_entropy pytorch or compiled describe another framework's kernels; the runtime runs fused ones (norm fused, cross_entropy fused)");
  }
  if (p.recompute == Recompute::kSelectiveOp) problems.add("plan: recompute selective_op (per-op checkpointing) is not implemented by the runtime (none, selective or full)");
  if (p.recompute_modules != kDefaultRecomputeModules) {
    problems.add("plan: recompute_modules " + recompute_modules_text(p.recompute_modules) + ": the runtime's selective recomputation re-runs the attention core only (core_attn)");
  }
  if (p.recompute == Recompute::kFull && (p.recompute_method != RecomputeMethod::kUniform || p.recompute_layers != 1)) problems.add("plan: recompute full with recompute_method " + std::string(to_string(p.recompute_method)) + " and recompute_layers " + std::to_string(p.recompute_layers) + " (partial recomputation) is not implemented by the runtime (full recomputes every layer alone: uniform 1)");
  if (m.vocab % p.tp != 0) {
    problems.add("model \"" + m.name + "\": vocab " + std::to_string(m.vocab) + " is not divisible by tp " + std::to_string(p.tp) +
                 " (the embedding and LM head are split by vocabulary over TP ranks, as Megatron-LM splits them; Megatron pads "
                 "the vocabulary to a multiple of 128 x tp: describe the model with the padded vocab, e.g. 50304 for GPT-2)");
  }
  problems.throw_if_any("the CPU runtime runs GPT-2- and Llama-style models (e.g. gpt-tiny), dense or MoE, with DP, TP (+SP), PP (GPipe, 1F1B, "
                        "interleaved 1F1B), CP (ring attention), ZeRO-0/1/2/3 and recomputation, and EP for MoE (with TP it needs --sequence-parallel)");
}

namespace {
std::string format_bytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes_to_gib(bytes));
  return text;
}
}  // namespace

void check_host_memory(const ModelSpec& m, const ParallelPlan& p, int ranks_on_host, double available_bytes) {
  const double per_rank = estimate_rank_memory(m, p).peak().memory.total_bytes();
  const double needed = per_rank * ranks_on_host;
  if (needed <= available_bytes) return;
  throw InputError("model \"" + m.name + "\": " + std::to_string(ranks_on_host) + " rank(s) on this host need at least " +
                       format_bytes(needed) + " (" + format_bytes(per_rank) + " per rank: fp32 weights, gradients, AdamW states and " +
                       "activations), but only " + format_bytes(available_bytes) + " is available",
                   "train a smaller model (e.g. --model gpt2-124m), spread the ranks over more hosts, or shard more (--tp, --pp, --zero 3)");
}

double host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void check_host_memory(const ModelSpec& m, const ParallelPlan& p, MPI_Comm world) {
  MPI_Comm host;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int ranks_on_host = 1;
  MPI_Comm_size(host, &ranks_on_host);
  MPI_Comm_free(&host);
  check_host_memory(m, p, ranks_on_host, host_available_bytes());
}

}  // namespace trainsim::cpu
