// Enumeration of the search space.
#include "sim/plan_space.hpp"

#include <algorithm>
#include <string>

namespace trainsim {

namespace {
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}
}  // namespace

namespace {

// Context-parallel sizes for tp x pp: each rank keeps at least min_cp_tokens of the sequence in
// 2 x cp load-balanced chunks (Megatron-Core's ring needs flash attention).
std::vector<int64_t> cp_sizes(const ModelSpec& m, const PlanSpaceOptions& o, int64_t tp, int64_t pp) {
  std::vector<int64_t> out;
  for (int64_t cp : divisors(o.gpus / (tp * pp))) {
    if (cp > 1 && (cp > o.max_cp || o.attention != AttentionKernel::kFlash || m.seq_len % (2 * cp) != 0 ||
                   m.seq_len / cp < o.min_cp_tokens)) {
      continue;
    }
    out.push_back(cp);
  }
  return out;
}

// The CP exchanges asked for that run at this size (check_context_parallel's rules): no p2p ring
// with sliding windows, a2a only where cp divides each TP rank's query and KV heads. Without CP
// the exchange is moot: the default alone.
std::vector<CpComm> cp_comm_choices(const ModelSpec& m, const PlanSpaceOptions& o, int64_t tp, int64_t cp) {
  if (cp == 1) return {CpComm::kP2p};
  std::vector<CpComm> out;
  for (CpComm c : o.cp_comms) {
    if (c == CpComm::kP2p && m.windowed_layers() > 0) continue;
    if (c == CpComm::kA2a && ((m.heads / tp) % cp != 0 || (m.kv_heads / tp) % cp != 0)) continue;
    out.push_back(c);
  }
  return out;
}

// The dispatchers asked for that differ for this expert grid: none matters while the experts are a
// TP-split dense FFN, and flex prices EP all-to-alls only (ep > 1, expert TP 1; validate_plan).
std::vector<MoeDispatcher> dispatcher_choices(const ModelSpec& m, const PlanSpaceOptions& o, const ParallelPlan& base) {
  if (!m.moe || base.experts_like_dense()) return {MoeDispatcher::kAllToAll};
  std::vector<MoeDispatcher> out;
  for (MoeDispatcher d : o.moe_dispatchers) {
    if (d == MoeDispatcher::kFlex && (base.ep == 1 || base.expert_tp_size() != 1)) continue;
    out.push_back(d);
  }
  return out;
}

// Expert-parallel sizes: 1, and for an MoE model the divisors of its experts that divide the
// stage's tp x cp x dp ranks.
std::vector<int64_t> ep_sizes(const ModelSpec& m, int64_t stage_ranks) {
  std::vector<int64_t> out = {1};
  if (!m.moe) return out;
  for (int64_t ep : divisors(m.moe->experts)) {
    if (ep > 1 && stage_ranks % ep == 0) out.push_back(ep);
  }
  return out;
}

// Expert TP sizes for an MoE model with tp > 1: 1 and tp where the grid and the experts' width
// allow them (0, the default, stands for its value: 1 with EP, tp without); dense models: 0.
std::vector<int64_t> expert_tp_sizes(const ModelSpec& m, int64_t tp, int64_t ep, int64_t stage_ranks) {
  if (!m.moe) return {0};
  std::vector<int64_t> out;
  for (int64_t etp : {int64_t{1}, tp}) {
    if (etp == tp && etp == 1 && !out.empty()) break;
    if (m.moe->expert_ffn_hidden % etp != 0) continue;
    if (!(ep == 1 && etp == tp) && stage_ranks % (ep * etp) != 0) continue;
    out.push_back(etp);
  }
  return out;
}

struct RecomputeChoice {
  Recompute recompute = Recompute::kNone;
  RecomputeMethod method = RecomputeMethod::kUniform;
  int64_t layers = 1;
  RecomputeModules modules = kDefaultRecomputeModules;
};

// None, the framework's selective, full; Megatron-Core's selective modules asked for; then the
// partial full recomputation asked for, unless it is one of those for this plan's chunks (block 0
// is none, block >= a chunk's layers is full).
std::vector<RecomputeChoice> recompute_choices(const ModelSpec& m, const PlanSpaceOptions& o, const ParallelPlan& p) {
  std::vector<RecomputeChoice> out = {{Recompute::kNone}, {o.selective}, {Recompute::kFull}};
  if (o.selective == Recompute::kSelective && o.selective_modules != kDefaultRecomputeModules) {
    out.push_back({Recompute::kSelective, RecomputeMethod::kUniform, 1, o.selective_modules});
  }
  const RecomputeChoice partial{Recompute::kFull, o.partial_recompute_method, o.partial_recompute_layers, kDefaultRecomputeModules};
  if (partial.method != RecomputeMethod::kBlock && partial.layers == 1) return out;  // every layer: full
  if (partial.method == RecomputeMethod::kBlock) {
    const std::vector<int64_t> chunks = virtual_stage_layers(m, p);
    if (partial.layers == 0 || partial.layers >= *std::max_element(chunks.begin(), chunks.end())) return out;
  }
  out.push_back(partial);
  return out;
}

// Whether ZB-V's two chunks per rank split the layers over pp stages: 2pp divides the layers, or
// the layers + 2 (the first and last chunks one layer short).
bool zero_bubble_v_splits(const ModelSpec& m, int64_t pp) { return m.layers % (2 * pp) == 0 || (m.layers + 2) % (2 * pp) == 0; }

// Whether `stages` virtual pipeline stages split the layers evenly, or (with uneven_pipeline) the
// layers + 2, the embedding and the loss counted as a layer each (plan/stage_layers.cpp splits
// them; export writes Megatron-Core's accounting flags).
bool pipeline_splits(const ModelSpec& m, const PlanSpaceOptions& o, int64_t stages) {
  return m.layers % stages == 0 || (o.uneven_pipeline && (m.layers + 2) % stages == 0);
}

// The pipeline schedules of a plan with pp stages and m micro-batches, each with its model chunks:
// 1F1B, the Zero Bubble ones asked for (ZB-V with its two chunks where 2pp divides the layers, or
// the layers + 2), and interleaving over every vpp whose pp x vpp stages split the layers
// (pipeline_splits; m a multiple of pp).
std::vector<std::pair<int64_t, Schedule>> schedule_choices(const ModelSpec& m, const PlanSpaceOptions& o, int64_t pp, int64_t micro_batches) {
  std::vector<std::pair<int64_t, Schedule>> out = {{1, Schedule::k1F1B}};
  if (pp == 1) return out;
  for (Schedule s : o.zero_bubble) {
    if (s != Schedule::kZeroBubbleV) out.emplace_back(1, s);
    else if (zero_bubble_v_splits(m, pp)) out.emplace_back(2, s);
  }
  if (micro_batches % pp != 0) return out;
  for (int64_t v = 2; v <= o.max_vpp; ++v) {
    if (pipeline_splits(m, o, pp * v)) out.emplace_back(v, Schedule::kInterleaved);
  }
  return out;
}

// The rest of a plan for fixed sizes: micro-batch, schedule and interleaving, ZeRO, recomputation,
// SP (and TP communication overlap with it).
template <typename Visit>
int64_t enumerate_knobs(const ModelSpec& m, const PlanSpaceOptions& o, ParallelPlan base, Visit&& visit) {
  int64_t count = 0;
  const int64_t per_rank = o.global_batch / base.dp;
  for (int64_t mb : divisors(per_rank)) {
    if (mb > o.max_micro_batch) break;
    for (const auto& [vpp, schedule] : schedule_choices(m, o, base.pp, per_rank / mb)) {
      ParallelPlan chunked = base;
      chunked.vpp = vpp;
      chunked.schedule = schedule;
      const std::vector<RecomputeChoice> recomputes = recompute_choices(m, o, chunked);
      for (int zero = 0; zero <= 3; ++zero) {
        if (zero > 0 && base.dp * base.cp == 1) continue;  // nothing to shard
        if (zero == 2 && base.pp > 1) continue;           // with a pipeline ZeRO-2 runs as ZeRO-3 does: searched once, as 3
        if (zero == 3 && base.lora_rank > 0) continue;    // LoRA with ZeRO-3 is not modeled (validate_plan)
        for (const RecomputeChoice& r : recomputes) {
          for (int sp = 0; sp <= (base.tp > 1 ? 1 : 0); ++sp) {
            if (sp == 1 && (m.seq_len / base.cp) % base.tp != 0) continue;
            if (sp == 0 && base.tp > 1 && (base.cp > 1 || (m.moe && !base.experts_like_dense()))) continue;  // Megatron-Core runs these with SP
            ParallelPlan p = base;
            p.vpp = vpp;
            p.schedule = schedule;
            p.micro_batch = mb;
            p.zero_stage = zero;
            p.recompute = r.recompute;
            p.recompute_method = r.method;
            p.recompute_layers = r.layers;
            p.recompute_modules = r.modules;
            p.sequence_parallel = sp == 1;
            // The plan, then with the TP and the EP overlaps where they apply.
            const bool ep_overlap = o.ep_comm_overlap && p.ep > 1 && p.recompute != Recompute::kFull && (p.pp == 1 || schedule == Schedule::kInterleaved) &&
                                    p.moe_dispatcher != MoeDispatcher::kAllGather && (p.recompute_modules & kRecomputeMoe) == 0;
            for (int tpo = 0; tpo <= (p.sequence_parallel && o.tp_comm_overlap ? 1 : 0); ++tpo) {
              for (int epo = 0; epo <= (ep_overlap ? 1 : 0); ++epo) {
                p.tp_comm_overlap = tpo == 1;
                p.ep_comm_overlap = epo == 1;
                ++count;
                visit(p);
              }
            }
          }
        }
      }
    }
  }
  return count;
}

}  // namespace

int64_t enumerate_plans(const ModelSpec& m, const PlanSpaceOptions& o,
                        const std::function<void(const ParallelPlan&)>& visit) {
  int64_t count = 0;
  const int64_t ffn = m.moe ? m.moe->shared_experts * m.moe->expert_ffn_hidden : m.ffn_hidden;  // TP-split (routed experts: expert_tp_sizes)
  for (int64_t tp : divisors(o.gpus)) {
    if (m.heads % tp != 0 || m.kv_heads % tp != 0 || ffn % tp != 0) continue;
    if (!o.tp_across_nodes && tp > o.gpus_per_node) continue;
    for (int64_t pp : divisors(o.gpus / tp)) {
      if (!pipeline_splits(m, o, pp)) continue;
      for (int64_t cp : cp_sizes(m, o, tp, pp)) {
        const int64_t dp = o.gpus / (tp * pp * cp);
        if (o.global_batch % dp != 0) continue;
        for (CpComm cp_comm : cp_comm_choices(m, o, tp, cp)) {
          for (int64_t ep : ep_sizes(m, tp * cp * dp)) {
            for (int64_t etp : expert_tp_sizes(m, tp, ep, tp * cp * dp)) {
              ParallelPlan base;
              base.dp = dp;
              base.tp = tp;
              base.pp = pp;
              base.cp = cp;
              base.cp_comm = cp_comm;
              base.ep = ep;
              base.expert_tp = etp;
              base.global_batch = o.global_batch;
              base.precision = o.precision;
              base.attention = o.attention;
              base.cross_entropy = o.cross_entropy;
              base.norm = o.norm;
              base.zero3_collectives = o.zero3_collectives;
              base.zero_engine = o.zero_engine;
              base.host_stack = o.host_stack;
              base.cuda_graphs = o.cuda_graphs;
              base.te_op_fuser = o.te_op_fuser;
              base.lora_rank = o.lora_rank;
              for (MoeDispatcher d : dispatcher_choices(m, o, base)) {
                base.moe_dispatcher = d;
                count += enumerate_knobs(m, o, base, visit);
              }
            }
          }
        }
      }
    }
  }
  return count;
}

std::string uneven_pipelines_not_searched(const ModelSpec& m, const PlanSpaceOptions& o) {
  if (o.uneven_pipeline) return "";
  std::string sizes;
  for (int64_t pp : divisors(o.gpus)) {
    if (pp > 1 && m.layers % pp != 0 && (m.layers + 2) % pp == 0) sizes += (sizes.empty() ? "" : ", ") + std::to_string(pp);
  }
  if (sizes.empty()) return "";
  return "pp " + sizes + " not searched: " + std::to_string(m.layers) + " layers split over them only with the embedding and the loss "
         "counted as a layer each (Megatron-Core's --account-for-embedding/loss-in-pipeline-split), left out by "
         "--no-uneven-pipeline";
}

std::vector<std::string> zero_bubble_not_searched(const ModelSpec& m, const PlanSpaceOptions& o) {
  std::vector<int64_t> pipelines;  // the pp > 1 enumerate_plans tries
  for (int64_t pp : divisors(o.gpus)) {
    if (pp > 1 && pipeline_splits(m, o, pp)) pipelines.push_back(pp);
  }
  std::vector<std::string> out;
  const std::string layers = std::to_string(m.layers) + " layers";
  for (Schedule s : o.zero_bubble) {
    const std::string name = to_string(s);
    if (pipelines.empty()) {
      out.push_back(name + " not searched: no pipeline (pp > 1 dividing both " + std::to_string(o.gpus) + " GPUs and " + layers + ")");
    } else if (s == Schedule::kZeroBubbleV && std::none_of(pipelines.begin(), pipelines.end(), [&](int64_t pp) { return zero_bubble_v_splits(m, pp); })) {
      std::string sizes;
      for (int64_t pp : pipelines) sizes += (sizes.empty() ? "" : ", ") + std::to_string(pp);
      out.push_back(name + " not searched: its two chunks per rank split " + layers + " over none of pp " + sizes +
                    " (2pp must divide the layers or the layers + 2)");
    }
  }
  return out;
}

std::vector<ParallelPlan> list_plans(const ModelSpec& m, const PlanSpaceOptions& o) {
  std::vector<ParallelPlan> plans;
  enumerate_plans(m, o, [&](const ParallelPlan& p) { plans.push_back(p); });
  return plans;
}

}  // namespace trainsim
