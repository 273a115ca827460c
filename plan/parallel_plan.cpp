// Plan validation: the constraints Megatron-LM and DeepSpeed enforce, each reported with values.
#include "plan/parallel_plan.hpp"

#include <algorithm>
#include <sstream>

#include "common/limits.hpp"

namespace trainsim {

namespace {
std::string s(int64_t x) { return std::to_string(x); }

// No plan has a million of anything; the bound keeps the products below (dp x micro_batch,
// pp x vpp, ...) inside int64 for any value a file can hold (found by fuzz/).
constexpr int64_t kMaxPlanSize = int64_t{1} << 20;

// Megatron-Core's context parallelism splits each sequence in 2 x cp chunks (each rank takes one
// from each end, balancing causal attention) and runs Transformer Engine's fused ring attention.
template <typename Add>
void check_context_parallel(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, PlanRules rules, Add& add) {
  if (p.cp <= 1) return;
  if (m.seq_len % (2 * p.cp) != 0) {
    add("cp", "cp (" + s(p.cp) + ") needs seq_len (" + s(m.seq_len) + ") divisible by 2 x cp (" + s(2 * p.cp) +
                  ": two load-balanced chunks per rank)" + of_model);
  } else if (p.sequence_parallel && (m.seq_len / p.cp) % p.tp != 0) {
    add("cp", "sequence parallelism needs each CP rank's tokens (seq_len / cp = " + s(m.seq_len / p.cp) +
                  ") divisible by tp (" + s(p.tp) + ")");
  }
  if (p.attention != AttentionKernel::kFlash && rules == PlanRules::kFrameworks) {
    add("cp", "context parallelism runs fused (flash) ring attention; attention is unfused (trainsim's CPU runtime runs its own unfused ring: `trainsim run`)");
  }
  if (p.cp_comm == CpComm::kP2p && m.windowed_layers() > 0) {
    // Transformer Engine's context_parallel.py asserts the same.
    add("cp_comm", "the p2p ring does not run sliding-window attention (Transformer Engine supports windows with cp_comm all_gather "
                   "or a2a)" + of_model);
  }
  if (p.cp_comm == CpComm::kA2a && ((m.heads / p.tp) % p.cp != 0 || (m.kv_heads / p.tp) % p.cp != 0)) {
    add("cp_comm", "a2a (Ulysses) splits each TP rank's heads over the CP ranks: cp (" + s(p.cp) + ") must divide heads / tp (" +
                       s(m.heads / p.tp) + ") and kv_heads / tp (" + s(m.kv_heads / p.tp) + ")" + of_model);
  }
}

// Megatron-Core's TransformerConfig checks for overlap_moe_expert_parallel_comm: expert
// parallelism, the all-to-all or flex dispatcher, no full recomputation, and with a pipeline the
// interleaved schedule (the combined 1F1B exists for no pipeline and for interleaving).
template <typename Add>
void check_ep_comm_overlap(const ParallelPlan& p, const std::string& of_model, Add& add) {
  if (p.ep <= 1) add("ep_comm_overlap", "the EP communication overlap hides the MoE all-to-alls: it needs ep > 1 (ep is " + s(p.ep) + ")" + of_model);
  if (p.moe_dispatcher == MoeDispatcher::kAllGather) {
    add("ep_comm_overlap", "the EP communication overlap runs with the alltoall or flex dispatcher (moe_dispatcher is allgather)");
  }
  if (p.recompute == Recompute::kFull) add("ep_comm_overlap", "the EP communication overlap needs recompute other than full (Megatron-Core refuses both)");
  if (p.pp > 1 && p.schedule != Schedule::kInterleaved) {
    add("ep_comm_overlap", "with pp > 1 the EP communication overlap needs the interleaved schedule (vpp > 1), as Megatron-Core's combined 1F1B does");
  }
}

// Megatron-Core's expert grid: expert_tp x ep x expert-dp carved out of the tp x cp x dp ranks of
// a stage, each rank holding experts / ep experts split expert_tp ways; without expert
// parallelism and with expert TP = TP the experts are a TP-split dense FFN.
template <typename Add>
void check_expert_parallel(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  const auto real = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  if (!m.moe && p.moe_dispatcher != MoeDispatcher::kAllToAll) {
    add("moe_dispatcher", std::string("moe_dispatcher ") + to_string(p.moe_dispatcher) + " describes expert routing, and there are no experts" + of_model);
  }
  if (!m.moe && (p.moe_imbalance != 1.0 || p.moe_capacity_factor > 0)) {
    add("moe_imbalance", "moe_imbalance and moe_capacity_factor describe expert routing, and there are no experts" + of_model +
                             " (it has no \"moe\")");
  }
  if (p.ep_comm_overlap) check_ep_comm_overlap(p, of_model, add);
  if (!(p.moe_imbalance >= 1.0 && p.moe_imbalance <= 1e3)) {
    add("moe_imbalance", "moe_imbalance (" + real(p.moe_imbalance) + ") must be between 1 (balanced) and 1000");
  }
  if (!(p.moe_capacity_factor >= 0.0 && p.moe_capacity_factor <= 1e3)) {
    add("moe_capacity_factor", "moe_capacity_factor (" + real(p.moe_capacity_factor) + ") must be between 0 (dropless) and 1000");
  }
  if (p.expert_tp < 0) add("expert_tp", "expert_tp (" + s(p.expert_tp) + ") must be >= 1 (0: the default)");
  if (!m.moe) {
    if (p.ep > 1) add("ep", "expert parallelism (ep " + s(p.ep) + ") needs a mixture-of-experts model" + of_model + " (it has no \"moe\")");
    if (p.expert_tp > 0) add("expert_tp", "expert_tp (" + s(p.expert_tp) + ") splits experts, and there are none" + of_model + " (it has no \"moe\")");
    return;
  }
  const int64_t etp = p.expert_tp_size();
  if (m.moe->experts % p.ep != 0) add("ep", "ep (" + s(p.ep) + ") must divide the experts (" + s(m.moe->experts) + ")" + of_model);
  if (etp > 0 && m.moe->expert_ffn_hidden % etp != 0) {
    add(p.expert_tp > 0 ? "expert_tp" : "tp", "expert tensor parallelism (" + s(etp) + ") must divide expert_ffn_hidden (" +
                                                   s(m.moe->expert_ffn_hidden) + ")" + of_model);
  }
  if (p.moe_dispatcher == MoeDispatcher::kFlex && (p.ep <= 1 || etp != 1)) {
    add("moe_dispatcher", "moe_dispatcher flex (DeepEP / HybridEP) needs ep > 1 and expert_tp 1 (ep " + s(p.ep) + ", expert_tp " + s(etp) +
                              "): trainsim prices its node-level exchange over the EP group only");
  }
  if (p.experts_like_dense()) return;
  if (p.tp > 1 && !p.sequence_parallel) {
    add(p.ep > 1 ? "ep" : "expert_tp", "routing tokens to experts apart from TP (ep " + s(p.ep) + ", expert_tp " + s(etp) + ") with tp " +
                                           s(p.tp) + " needs sequence parallelism (Megatron-Core routes each TP rank's sequence shard)");
  }
  if (etp > 0 && (p.tp * p.cp * p.dp) % (p.ep * etp) != 0) {
    add("ep", "ep x expert_tp (" + s(p.ep) + " x " + s(etp) + ") must divide tp x cp x dp (" + s(p.tp * p.cp * p.dp) +
                  "): the expert groups are carved out of a pipeline stage's ranks");
  }
}

// The ZeRO stage and its shard group (HSDP).
template <typename Add>
void check_zero(const ParallelPlan& p, Add& add) {
  if (p.zero_stage < 0 || p.zero_stage > 3) add("zero_stage", "zero stage (" + s(p.zero_stage) + ") must be 0, 1, 2 or 3");
  if (p.dp_shard < 0) add("dp_shard", "dp_shard (" + s(p.dp_shard) + ") must be >= 1 (leave it out to shard over every dp x cp rank)");
  if (p.dp_shard > 0 && ((p.dp * p.cp) % p.dp_shard != 0 || p.zero_stage == 0)) {
    add("dp_shard", "dp_shard (" + s(p.dp_shard) + ") shards ZeRO states over part of the dp x cp (" + s(p.dp * p.cp) +
                        ") ranks: it must divide them and needs zero_stage >= 1 (it is " + s(p.zero_stage) + ")");
  }
}

// Megatron-Core's explicit first/last-stage layer counts: the middle stages share the rest evenly,
// and with interleaving every stage's share splits evenly over its vpp chunks.
template <typename Add>
void check_stage_layers(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  if (p.first_stage_layers <= 0 && p.last_stage_layers <= 0) return;
  const std::string first = s(p.first_stage_layers), last = s(p.last_stage_layers);
  if (p.pp < 2) {
    add("first_stage_layers", "first/last-stage layer counts (" + first + ", " + last + ") need pp > 1");
    return;
  }
  const int64_t middle_stages = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
  const int64_t middle_layers = m.layers - p.first_stage_layers - p.last_stage_layers;
  if (middle_layers < middle_stages || (middle_stages == 0 && middle_layers != 0) ||
      (middle_stages > 0 && middle_layers % middle_stages != 0)) {
    add("first_stage_layers", "the layers left after the first/last stages (" + s(m.layers) + " - " + first + " - " + last +
                                  " = " + s(middle_layers) + ") must split evenly, at least one each, over the " +
                                  s(middle_stages) + " middle stages" + of_model);
    return;
  }
  const int64_t middle = middle_stages > 0 ? middle_layers / middle_stages : 0;
  for (int64_t on_stage : {p.first_stage_layers, p.last_stage_layers, middle}) {
    if (on_stage > 0 && on_stage % p.vpp != 0) {
      add("vpp", "vpp (" + s(p.vpp) + ") must divide every stage's layers (first " + first + ", middle " + s(middle) +
                     ", last " + last + ") to split them over the model chunks");
      return;
    }
  }
}

// An explicit layout: one count per virtual stage, the model's layers in all; not with the
// first/last-stage counts or the V placement (whose chunks it would have to name by rank).
template <typename Add>
void check_pipeline_layout(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  if (p.pipeline_layout.empty()) return;
  const int64_t stages = p.pp * p.vpp;
  if (static_cast<int64_t>(p.pipeline_layout.size()) != stages) {
    add("pipeline_layout", "pipeline_layout has " + s(static_cast<int64_t>(p.pipeline_layout.size())) +
                               " stages; pp x vpp (" + s(p.pp) + " x " + s(p.vpp) + ") needs " + s(stages) + ", one per virtual stage in model order");
    return;
  }
  int64_t sum = 0;
  for (const int64_t n : p.pipeline_layout) {
    if (n < 0 || n > limits::kMaxLayers) {
      add("pipeline_layout", "every stage's layer count must be from 0 to " + s(limits::kMaxLayers) + " (one is " + s(n) + ")");
      return;
    }
    sum += n;
  }
  if (sum != m.layers) add("pipeline_layout", "pipeline_layout places " + s(sum) + " layers, not the " + s(m.layers) + of_model);
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    add("pipeline_layout", "give either pipeline_layout or first/last_stage_layers, not both");
  }
  if (p.schedule == Schedule::kZeroBubbleV) add("pipeline_layout", "the zb-v schedule places its chunks in a V: pipeline_layout is not supported with it");
}

// FP8 primary weights and torchao's row-wise recipe need precision fp8, and exclude each other.
template <typename Add>
void check_fp8(const ParallelPlan& p, Add& add) {
  if (p.fp8_params && !fp8_family(p.precision)) {
    add("fp8_params", std::string("FP8 primary weights need precision fp8 or mxfp8 (precision is ") + to_string(p.precision) + ")");
  }
  if (p.fp8_recipe != Fp8Recipe::kDelayed && p.precision != Precision::kFp8) {
    add("fp8_recipe", std::string("fp8_recipe ") + to_string(p.fp8_recipe) + " needs precision fp8 (precision is " + to_string(p.precision) + ")");
  }
  if (p.fp8_recipe == Fp8Recipe::kRowwise && p.fp8_params) {
    add("fp8_params", "FP8 primary weights are Transformer Engine's (fp8_recipe delayed); torchao's rowwise recipe keeps bf16 "
                      "weights and gathers them in bf16");
  }
}

// ZB-V runs exactly two chunks per rank placed by the V (torchtitan's ScheduleZBVZeroBubble: two
// stages per rank, pp > 1), splitting the layers evenly, or with the embedding and the loss
// counted as a layer each (both then on the first rank, one layer fewer in each of its chunks).
template <typename Add>
void check_v_schedule(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  if (p.pp == 1) add("schedule", "the zb-v schedule needs pp > 1");
  if (p.vpp != 2) add("vpp", "the zb-v schedule runs two model chunks per stage: vpp must be 2 (vpp is " + s(p.vpp) + ")");
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    add("first_stage_layers", "the zb-v schedule splits the layers evenly over its 2 x pp chunks (no first/last-stage counts)");
  }
  if (p.pp > 1 && (m.layers % (2 * p.pp) != 0 && (m.layers + 2) % (2 * p.pp) != 0)) {
    add("schedule", "the zb-v schedule needs 2 x pp (" + s(2 * p.pp) + ") to divide the layers (" + s(m.layers) +
                        ") or the layers + 2 (the embedding and loss counted as layers)" + of_model);
  }
}

// vpp > 1 needs the interleaved (or ZB-V) schedule, and the interleaved one needs pp > 1, vpp > 1,
// a layer per virtual stage and micro-batches in multiples of pp.
template <typename Add>
void check_interleaving(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  if (p.schedule == Schedule::kZeroBubbleV) return check_v_schedule(p, m, of_model, add);
  if (p.vpp > 1 && p.schedule != Schedule::kInterleaved) {
    add("vpp", "vpp (" + s(p.vpp) + ") > 1 needs the interleaved schedule (schedule is " + to_string(p.schedule) + ")");
  }
  if (p.schedule == Schedule::kInterleaved) {
    if (p.pp == 1) add("schedule", "the interleaved schedule needs pp > 1");
    if (p.vpp == 1) add("vpp", "the interleaved schedule needs vpp > 1 model chunks per stage (vpp is 1)");
    // Layers that pp x vpp does not divide go one each to the earliest virtual stages; when
    // layers + 2 divides, the embedding and the loss count as a layer each (Megatron-Core's
    // accounting, NeMo's 405B recipes), so the first and last virtual stage may hold none.
    const bool accounted = (m.layers + 2) % (p.pp * p.vpp) == 0 || p.first_stage_layers > 0 || p.last_stage_layers > 0 ||
                           !p.pipeline_layout.empty();
    if (m.layers < p.pp * p.vpp && !accounted) {
      add("vpp", "pp x vpp (" + s(p.pp) + " x " + s(p.vpp) + " = " + s(p.pp * p.vpp) + ") virtual stages need at least one layer each (or layers + 2 divisible by pp x vpp, the embedding and loss counted as layers); the model has " +
                     s(m.layers) + of_model);
    }
    if (p.global_batch % (p.dp * p.micro_batch) == 0 && p.micro_batches() % p.pp != 0) {
      add("global_batch", "the interleaved schedule needs micro-batches per DP rank (" + s(p.micro_batches()) +
                              ") to be a multiple of pp (" + s(p.pp) + ")");
    }
  }
}

// Megatron-Core's --recompute-method / --recompute-num-layers say which layers full recomputation
// covers; its TransformerConfig refuses them with selective recompute (transformer_config.py).
template <typename Add>
void check_recompute_span(const ParallelPlan& p, Add& add) {
  const bool uniform = p.recompute_method == RecomputeMethod::kUniform, every = p.recompute_method == RecomputeMethod::kEvery;
  const std::string method = std::string("recompute_method ") + to_string(p.recompute_method);
  if (p.recompute_layers < (uniform || every ? 1 : 0)) {
    add("recompute_layers", "recompute_layers (" + s(p.recompute_layers) + ") must be >= " +
                                (uniform ? "1 with " + method + " (the layers of each recomputed group)"
                                 : every ? "1 with " + method + " (one layer in every N recomputed)"
                                         : "0 with " + method + " (the layers recomputed per model chunk; 0: none)"));
  }
  if (p.recompute_layers > limits::kMaxLayers) {
    add("recompute_layers", "recompute_layers (" + s(p.recompute_layers) + ") must be <= " + s(limits::kMaxLayers) + " (layers of a model)");
  }
  if (p.recompute != Recompute::kFull && (!uniform || p.recompute_layers != 1)) {
    add("recompute_method", method + " with recompute_layers " + s(p.recompute_layers) + " chooses the layers of full recomputation, and recompute is " +
                                to_string(p.recompute) + " (set recompute full, or leave recompute_method and recompute_layers out)");
  }
}

// Megatron-Core's --recompute-modules (TransformerConfig's checks): selective recomputation only,
// MoE modules on MoE layers, no whole-MoE checkpoint under the EP overlap. (Its refusal of moe_act
// and layernorm under delayed FP8 scaling is not applied: recipes that allow them (tensorwise)
// were long priced as delayed, and the refusal is Megatron-Core's, not a cost.)
template <typename Add>
void check_recompute_modules(const ParallelPlan& p, const ModelSpec& m, const std::string& of_model, Add& add) {
  const RecomputeModules r = p.recompute_modules;
  if (r == kDefaultRecomputeModules) return;
  const std::string listed = "[" + recompute_modules_text(r) + "]";
  if (p.recompute != Recompute::kSelective) {
    add("recompute_modules", listed + " choose what selective recomputation re-runs, and recompute is " + to_string(p.recompute) + " (set recompute selective)");
  }
  const RecomputeModules moe_only = kRecomputeMoeAct | kRecomputeMoe | kRecomputeSharedExperts | kRecomputeLayernorm;
  if (!m.moe && (r & moe_only) != 0) add("recompute_modules", listed + ": moe_act, moe, shared_experts and layernorm (separate from a linear only before an MoE block) need experts" + of_model);
  if (m.moe && m.moe->dense_layers == 0 && (r & kRecomputeMlp) != 0) {
    add("recompute_modules", listed + ": mlp checkpoints a dense MLP and every layer is MoE" + of_model + " (use moe or moe_act)");
  }
  if (!m.mla && (r & kRecomputeMlaUpProj) != 0) add("recompute_modules", listed + ": mla_up_proj needs multi-head latent attention" + of_model);
  if (m.moe && m.moe->shared_experts == 0 && (r & kRecomputeSharedExperts) != 0) add("recompute_modules", listed + ": there are no shared experts" + of_model);
  if (p.ep_comm_overlap && (r & kRecomputeMoe) != 0) add("recompute_modules", listed + ": Megatron-Core refuses moe recompute with the EP communication overlap");
}

// Sizes beyond any job (common/limits.hpp), refused before products of them can overflow.
template <typename Add>
void check_upper_bounds(const ParallelPlan& p, const Add& add) {
  const std::pair<const char*, int64_t> ranks[] = {{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"cp", p.cp}, {"ep", p.ep},
                                                   {"dp_shard", p.dp_shard}};
  for (const auto& [key, value] : ranks) {
    if (value > limits::kMaxGpus) add(key, std::string(key) + " (" + s(value) + ") must be <= " + s(limits::kMaxGpus) + " (GPUs in one job)");
  }
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"micro_batch", p.micro_batch}, {"global_batch", p.global_batch}}) {
    if (value > limits::kMaxBatch) add(key, std::string(key) + " (" + s(value) + ") must be <= " + s(limits::kMaxBatch) + " sequences");
  }
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"vpp", p.vpp}, {"first_stage_layers", p.first_stage_layers},
                                   {"last_stage_layers", p.last_stage_layers}}) {
    if (value > limits::kMaxLayers) add(key, std::string(key) + " (" + s(value) + ") must be <= " + s(limits::kMaxLayers) + " (layers of a model)");
  }
  if (static_cast<double>(p.dp) * static_cast<double>(p.tp) * static_cast<double>(p.pp) * static_cast<double>(p.cp) >
      static_cast<double>(limits::kMaxGpus)) {
    add("gpus", "dp x tp x pp x cp (" + s(p.dp) + " x " + s(p.tp) + " x " + s(p.pp) + " x " + s(p.cp) + ") must be <= " +
                    s(limits::kMaxGpus) + " GPUs");
  }
}

}  // namespace

ProblemList validate_plan(const ParallelPlan& p, const ModelSpec& m, const std::string& where, PlanRules rules) {
  ProblemList problems;
  auto add = [&](const std::string& key, const std::string& message) {
    problems.add(where + ": " + key + ": " + message);
  };
  const std::pair<const char*, int64_t> sizes[] = {{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"vpp", p.vpp},
                                                   {"cp", p.cp}, {"ep", p.ep}, {"micro_batch", p.micro_batch},
                                                   {"global_batch", p.global_batch}};
  for (const auto& [key, value] : sizes) {
    if (value < 1) add(key, std::string(key) + " (" + s(value) + ") must be >= 1");
    if (value > kMaxPlanSize) add(key, std::string(key) + " (" + s(value) + ") must be <= " + s(kMaxPlanSize));
  }
  check_upper_bounds(p, add);
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"first_stage_layers", p.first_stage_layers},
                                   {"last_stage_layers", p.last_stage_layers}}) {
    if (value < 0) add(key, std::string(key) + " (" + s(value) + ") must be >= 1 (leave it out for the even split)");
    if (value > kMaxPlanSize) add(key, std::string(key) + " (" + s(value) + ") must be <= " + s(kMaxPlanSize));
  }
  if (!problems.empty()) return problems;
  if (static_cast<double>(p.dp) * p.tp * p.pp * p.cp > kMaxPlanSize) {  // in double: the product may overflow
    add("dp", "dp x tp x pp x cp (" + s(p.dp) + " x " + s(p.tp) + " x " + s(p.pp) + " x " + s(p.cp) + " ranks) must be <= " +
                  s(kMaxPlanSize));
    return problems;
  }

  const std::string of_model = " of model \"" + m.name + "\"";
  if (m.heads % p.tp != 0) add("tp", "tp (" + s(p.tp) + ") must divide heads (" + s(m.heads) + ")" + of_model);
  if (m.kv_heads % p.tp != 0) {
    add("tp", "tp (" + s(p.tp) + ") must divide kv_heads (" + s(m.kv_heads) + ")" + of_model);
  }
  // The dense FFN, or an MoE layer's shared experts (TP-split; the routed ones: check_expert_parallel).
  const int64_t ffn = m.moe ? m.moe->shared_experts * m.moe->expert_ffn_hidden : m.ffn_hidden;
  if (ffn % p.tp != 0) add("tp", "tp (" + s(p.tp) + ") must divide " + (m.moe ? "the shared experts' width (" : "ffn_hidden (") + s(ffn) + ")" + of_model);
  if (p.pp > m.layers) add("pp", "pp (" + s(p.pp) + ") must be <= layers (" + s(m.layers) + ")" + of_model);
  if (p.global_batch % (p.dp * p.micro_batch) != 0) {
    add("global_batch", "global_batch (" + s(p.global_batch) + ") must be a multiple of dp x micro_batch (" + s(p.dp) +
                            " x " + s(p.micro_batch) + " = " + s(p.dp * p.micro_batch) + ")");
  }
  if (p.sequence_parallel && p.tp == 1) add("sequence_parallel", "sequence parallelism needs tp > 1 (tp is 1)");
  if (p.tp_comm_overlap && (p.tp == 1 || !p.sequence_parallel)) {
    add("tp_comm_overlap", "TP communication overlap needs tp > 1 and sequence_parallel (tp is " + s(p.tp) + ", sequence_parallel " +
                               (p.sequence_parallel ? "true" : "false") + "), as Megatron-Core's --tp-comm-overlap does");
  }
  check_fp8(p, add);
  if (p.sequence_parallel && m.seq_len % p.tp != 0) {
    add("sequence_parallel", "tp (" + s(p.tp) + ") must divide seq_len (" + s(m.seq_len) + ") to split the sequence");
  }
  check_interleaving(p, m, of_model, add);
  check_stage_layers(p, m, of_model, add);
  check_pipeline_layout(p, m, of_model, add);
  check_zero(p, add);
  check_context_parallel(p, m, of_model, rules, add);
  check_expert_parallel(p, m, of_model, add);
  check_recompute_span(p, add);
  check_recompute_modules(p, m, of_model, add);
  if (p.cpu_offload_layers < 0 || p.cpu_offload_layers >= m.layers) {
    add("cpu_offload_layers", "cpu_offload_layers (" + s(p.cpu_offload_layers) + ") must be >= 0 and < layers (" + s(m.layers) + ")" + of_model);
  }
  if (p.cpu_offload_layers > 0 && (p.pp > 1 || p.recompute != Recompute::kNone)) {
    add("cpu_offload_layers", "CPU offloading needs pp 1 and no recomputation (Megatron-Core refuses both with it; pp " + s(p.pp) +
                                  ", recompute " + to_string(p.recompute) + ")");
  }
  if (p.lora_rank < 0 || p.lora_rank > kMaxPlanSize) add("lora_rank", "lora_rank (" + s(p.lora_rank) + ") must be >= 0 (0: no LoRA)");
  if (p.lora_rank > 0 && m.moe) add("lora_rank", "LoRA on the MoE layers" + of_model + " (adapters on the experts) is not modeled; LoRA applies to dense models");
  if (p.lora_rank > 0 && p.zero_stage >= 3) add("lora_rank", "LoRA with ZeRO-3 / FSDP is not modeled (zero_stage " + s(p.zero_stage) + "); use 0-2");
  return problems;
}

}  // namespace trainsim
