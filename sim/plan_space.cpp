// Enumeration of the search space.
#include "sim/plan_space.hpp"

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

int64_t enumerate_plans(const ModelSpec& m, const PlanSpaceOptions& o,
                        const std::function<void(const ParallelPlan&)>& visit) {
  int64_t count = 0;
  const int64_t ffn = m.moe ? m.moe->expert_ffn_hidden : m.ffn_hidden;
  for (int64_t tp : divisors(o.gpus)) {
    if (m.heads % tp != 0 || m.kv_heads % tp != 0 || ffn % tp != 0) continue;
    if (!o.tp_across_nodes && tp > o.gpus_per_node) continue;
    for (int64_t pp : divisors(o.gpus / tp)) {
      if (m.layers % pp != 0) continue;
      const int64_t dp = o.gpus / (tp * pp);
      if (o.global_batch % dp != 0) continue;
      const int64_t per_rank = o.global_batch / dp;
      for (int64_t mb : divisors(per_rank)) {
        if (mb > o.max_micro_batch) break;
        const int64_t micro_batches = per_rank / mb;
        std::vector<int64_t> vpps = {1};
        if (pp > 1 && micro_batches % pp == 0) {
          for (int64_t v = 2; v <= o.max_vpp; ++v) {
            if (m.layers % (pp * v) == 0) vpps.push_back(v);
          }
        }
        for (int64_t vpp : vpps) {
          for (int zero = 0; zero <= 3; ++zero) {
            if (zero > 0 && dp == 1) continue;     // nothing to shard
            if (zero >= 2 && pp > 1) continue;     // not supported with pipelines
            for (Recompute r : {Recompute::kNone, o.selective, Recompute::kFull}) {
              for (int sp = 0; sp <= (tp > 1 ? 1 : 0); ++sp) {
                if (sp == 1 && m.seq_len % tp != 0) continue;
                ParallelPlan p;
                p.dp = dp;
                p.tp = tp;
                p.pp = pp;
                p.vpp = vpp;
                p.schedule = vpp > 1 ? Schedule::kInterleaved : Schedule::k1F1B;
                p.micro_batch = mb;
                p.global_batch = o.global_batch;
                p.zero_stage = zero;
                p.recompute = r;
                p.sequence_parallel = sp == 1;
                p.precision = o.precision;
                p.attention = o.attention;
                p.cross_entropy = o.cross_entropy;
                p.norm = o.norm;
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

std::vector<ParallelPlan> list_plans(const ModelSpec& m, const PlanSpaceOptions& o) {
  std::vector<ParallelPlan> plans;
  enumerate_plans(m, o, [&](const ParallelPlan& p) { plans.push_back(p); });
  return plans;
}

}  // namespace trainsim
