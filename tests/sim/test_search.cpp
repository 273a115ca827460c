// Plan search: the best plan beats every hand-written plan, infeasible plans never rank, the
// result does not depend on the thread count, and deadlines / budgets prune.
#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <set>

#include "model/model_catalog.hpp"
#include "sim/plan_space.hpp"
#include "sim/search.hpp"
#include "sim/screen.hpp"
#include <nlohmann/json.hpp>
#include "plan/plan_json.hpp"

using namespace trainsim;

namespace {
struct Case {
  ModelSpec model = resolve_model("gpt3-6.7b");
  Hardware hw;
  SearchOptions options;
  Case() {
    hw.gpu = find_gpu("a100-sxm-80gb");
    hw.gpus = 32;
    hw.usd_per_gpu_hour = 2.0;
    options.space.gpus = 32;
    options.space.global_batch = 128;
    options.space.max_micro_batch = 8;
    options.threads = 2;
  }
};
}  // namespace

TEST_CASE("every candidate of the plan space is a valid plan for the GPU count") {
  Case c;
  int64_t n = enumerate_plans(c.model, c.options.space, [&](const ParallelPlan& p) {
    CHECK(p.gpus() == 32);
    CHECK(validate_plan(p, c.model, "space").empty());
  });
  CHECK(n > 500);
}

TEST_CASE("the plan space explores expert parallelism for an MoE model and context parallelism for long sequences") {
  PlanSpaceOptions space;
  space.gpus = 64;
  space.global_batch = 256;
  space.max_micro_batch = 2;
  const ModelSpec moe = resolve_model("qwen3-30b-a3b");
  std::set<int64_t> eps;
  enumerate_plans(moe, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, moe, "space").empty());
    eps.insert(p.ep);
  });
  CHECK(eps.count(1) == 1);
  CHECK(eps.count(8) == 1);
  CHECK(eps.count(64) == 1);
  ModelSpec dense = resolve_model("llama3-8b");
  dense.seq_len = 32768;
  std::set<int64_t> cps;
  enumerate_plans(dense, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, dense, "space").empty());
    CHECK(p.ep == 1);
    CHECK(dense.seq_len / p.cp >= space.min_cp_tokens);
    cps.insert(p.cp);
  });
  CHECK(cps == std::set<int64_t>{1, 2, 4, 8});
}

TEST_CASE("the plan space tries each CP exchange and MoE dispatcher asked for, where the plan allows it") {
  PlanSpaceOptions space;
  space.gpus = 16;
  space.global_batch = 16;
  space.max_micro_batch = 1;
  space.cp_comms = {CpComm::kP2p, CpComm::kAllGather, CpComm::kA2a};
  ModelSpec dense = resolve_model("llama3-8b");  // 32 heads, 8 KV heads
  dense.seq_len = 65536;
  std::map<CpComm, int64_t> by_comm;
  enumerate_plans(dense, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, dense, "space").empty());
    if (p.cp == 1) CHECK(p.cp_comm == CpComm::kP2p);
    if (p.cp_comm == CpComm::kA2a) CHECK((dense.kv_heads / p.tp) % p.cp == 0);  // Ulysses splits KV heads too
    if (p.cp > 1) ++by_comm[p.cp_comm];
  });
  CHECK(by_comm[CpComm::kP2p] == by_comm[CpComm::kAllGather]);
  CHECK(by_comm[CpComm::kA2a] > 0);
  CHECK(by_comm[CpComm::kA2a] < by_comm[CpComm::kP2p]);  // cp 16 with 8 KV heads: no a2a

  // Sliding windows: no p2p ring at all.
  ModelSpec windowed = resolve_model("gpt-oss-20b");
  windowed.seq_len = 65536;
  int64_t cp_plans = 0;
  enumerate_plans(windowed, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, windowed, "space").empty());
    if (p.cp > 1) CHECK(p.cp_comm != CpComm::kP2p);
    cp_plans += p.cp > 1 ? 1 : 0;
  });
  CHECK(cp_plans > 0);

  // Dispatchers: only where the experts are apart from TP; flex only with EP; no EP overlap with allgather.
  space.cp_comms = {CpComm::kP2p};
  space.moe_dispatchers = {MoeDispatcher::kAllToAll, MoeDispatcher::kAllGather, MoeDispatcher::kFlex};
  space.ep_comm_overlap = true;
  const ModelSpec moe = resolve_model("qwen3-30b-a3b");
  std::map<MoeDispatcher, int64_t> by_dispatcher;
  enumerate_plans(moe, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, moe, "space").empty());
    if (p.experts_like_dense()) CHECK(p.moe_dispatcher == MoeDispatcher::kAllToAll);
    if (p.moe_dispatcher == MoeDispatcher::kFlex) CHECK((p.ep > 1 && p.expert_tp_size() == 1));
    if (p.ep_comm_overlap) CHECK(p.moe_dispatcher != MoeDispatcher::kAllGather);
    ++by_dispatcher[p.moe_dispatcher];
  });
  CHECK(by_dispatcher[MoeDispatcher::kAllGather] > 0);
  CHECK(by_dispatcher[MoeDispatcher::kFlex] > 0);
  CHECK(by_dispatcher[MoeDispatcher::kAllToAll] > by_dispatcher[MoeDispatcher::kFlex]);  // ep 1 plans and the EP overlap
}

namespace {
// 16 GPUs, 64 sequences, micro-batches up to 2, MoE plans also tried with the EP overlap.
PlanSpaceOptions sixteen_gpus_with_ep_overlap() {
  PlanSpaceOptions space;
  space.gpus = 16;
  space.global_batch = 64;
  space.max_micro_batch = 2;
  space.ep_comm_overlap = true;
  return space;
}
}  // namespace

TEST_CASE("the plan space also tries Megatron-Core's selective recompute modules asked for") {
  PlanSpaceOptions space = sixteen_gpus_with_ep_overlap();
  const ModelSpec moe = resolve_model("qwen3-30b-a3b");
  const int64_t without = enumerate_plans(moe, space, [](const ParallelPlan&) {});
  space.selective_modules = kRecomputeMoe;
  int64_t with_modules = 0;
  const int64_t with = enumerate_plans(moe, space, [&](const ParallelPlan& p) {
    CHECK(validate_plan(p, moe, "space").empty());  // never the moe module under the EP overlap
    if (p.recompute_modules == kRecomputeMoe) ++with_modules;
    else CHECK(p.recompute_modules == kDefaultRecomputeModules);
  });
  CHECK(with_modules > 0);
  CHECK(with < 2 * without);  // one more recomputation choice of four (three and the modules), no overlap with it
  CHECK(with > without);
}

TEST_CASE("the plan space also tries the Zero Bubble schedules asked for, ZB-V where its chunks split the layers") {
  PlanSpaceOptions space = sixteen_gpus_with_ep_overlap();
  space.zero_bubble = {Schedule::kZeroBubble1p, Schedule::kZeroBubble2p, Schedule::kZeroBubbleV};
  for (const char* name : {"qwen3-30b-a3b", "gpt3-6.7b"}) {  // 48 layers; 32
    const ModelSpec m = resolve_model(name);
    std::map<Schedule, int64_t> seen;
    std::set<int64_t> v_pps;
    enumerate_plans(m, space, [&](const ParallelPlan& p) {
      CHECK(validate_plan(p, m, "space").empty());  // never the EP overlap without interleaving
      ++seen[p.schedule];
      if (is_zero_bubble(p.schedule)) CHECK(p.pp > 1);
      if (p.schedule == Schedule::kZeroBubbleV) {
        CHECK(p.vpp == 2);
        v_pps.insert(p.pp);
      }
    });
    INFO(name);
    CHECK(seen[Schedule::kZeroBubble1p] > 0);
    CHECK(seen[Schedule::kZeroBubble1p] == seen[Schedule::kZeroBubble2p]);
    CHECK(seen[Schedule::kZeroBubbleV] > 0);
    for (int64_t pp : v_pps) CHECK((m.layers % (2 * pp) == 0 || (m.layers + 2) % (2 * pp) == 0));
  }
  CHECK(zero_bubble_not_searched(resolve_model("gpt3-6.7b"), space).empty());
  space.zero_bubble.clear();
  enumerate_plans(resolve_model("gpt3-6.7b"), space, [](const ParallelPlan& p) { CHECK_FALSE(is_zero_bubble(p.schedule)); });
}

TEST_CASE("the Zero Bubble schedules no candidate can run are named with the reason, and none is enumerated") {
  PlanSpaceOptions space;
  space.global_batch = 15;
  space.max_micro_batch = 1;
  space.zero_bubble = {Schedule::kZeroBubble1p, Schedule::kZeroBubbleV};
  const ModelSpec odd = resolve_model("megatron-529.6b");  // 105 layers: 2pp (even) never divides 105 or 107
  space.gpus = 15;                                          // pp 3, 5, 15 divide both
  const std::vector<std::string> v_only = zero_bubble_not_searched(odd, space);
  REQUIRE(v_only.size() == 1);
  CHECK(v_only[0].find("zb-v not searched") == 0);
  CHECK(v_only[0].find("none of pp 3, 5, 15") != std::string::npos);
  int64_t one_p = 0;
  enumerate_plans(odd, space, [&](const ParallelPlan& p) {
    CHECK(p.schedule != Schedule::kZeroBubbleV);
    one_p += p.schedule == Schedule::kZeroBubble1p;
  });
  CHECK(one_p > 0);
  space.gpus = 8;  // no pp > 1 divides 8 and 105: neither schedule has a pipeline to run on
  const std::vector<std::string> neither = zero_bubble_not_searched(odd, space);
  REQUIRE(neither.size() == 2);
  for (const std::string& why : neither) CHECK(why.find("no pipeline (pp > 1 dividing both 8 GPUs and 105 layers)") != std::string::npos);
}

TEST_CASE("a framework's selective recomputation and loss are the ones the plan space explores") {
  Case c;
  c.options.space.selective = Recompute::kSelectiveOp;  // torchtitan (FrameworkPreset)
  c.options.space.cross_entropy = LossKernel::kPytorch;
  c.options.space.norm = NormKernel::kEager;
  int64_t per_op = 0;
  enumerate_plans(c.model, c.options.space, [&](const ParallelPlan& p) {
    CHECK(p.recompute != Recompute::kSelective);
    CHECK(p.cross_entropy == LossKernel::kPytorch);
    CHECK(p.norm == NormKernel::kEager);
    if (p.recompute == Recompute::kSelectiveOp) ++per_op;
  });
  CHECK(per_op > 0);
}

TEST_CASE("the best plan found beats or equals every hand-written plan") {
  Case c;
  const SearchResult r = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(!r.plans.empty());
  const double best = r.plans.front().prediction.iteration_time_s;
  const DatasheetCostModel cost(c.hw, Precision::kBf16, default_efficiency_constants());
  const auto hand = [&](int64_t dp, int64_t tp, int64_t pp, int64_t mb, int zero, Recompute rc, bool sp) {
    ParallelPlan p;
    p.dp = dp;
    p.tp = tp;
    p.pp = pp;
    p.micro_batch = mb;
    p.global_batch = 128;
    p.zero_stage = zero;
    p.recompute = rc;
    p.sequence_parallel = sp;
    REQUIRE(validate_plan(p, c.model, "hand").empty());
    return predict_iteration(c.model, p, c.hw, cost);
  };
  for (const Prediction& p : {hand(32, 1, 1, 1, 0, Recompute::kNone, false), hand(4, 8, 1, 2, 1, Recompute::kSelective, true),
                              hand(8, 2, 2, 4, 1, Recompute::kNone, false), hand(32, 1, 1, 4, 3, Recompute::kFull, false),
                              hand(2, 4, 4, 1, 0, Recompute::kFull, true)}) {
    if (p.fits) CHECK(best <= p.iteration_time_s * (1 + 1e-12));
  }
}

TEST_CASE("infeasible plans are counted, never ranked") {
  Case c;
  c.model = resolve_model("llama3-70b");
  c.options.space.global_batch = 64;
  const SearchResult r = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(r.pruned.at("do not fit in memory") > 0);
  CHECK(r.evaluated == r.feasible + r.pruned.at("do not fit in memory"));
  for (const RankedPlan& p : r.plans) CHECK(p.prediction.fits);
}

TEST_CASE("when nothing fits, the search keeps the candidate needing the least device memory, whatever the threads") {
  Case c;
  c.model = resolve_model("llama3-405b");
  c.hw.gpus = 8;
  c.options.space.gpus = 8;
  c.options.space.global_batch = 8;
  c.options.threads = 1;
  const SearchResult one = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(one.feasible == 0);
  REQUIRE(one.closest_miss.has_value());
  CHECK(one.closest_miss_bytes > c.hw.gpu.memory_bytes);
  const std::unique_ptr<CostModel> cost = CostModelChoice{}.make(c.hw, Precision::kBf16, false);
  for (const ParallelPlan& p : list_plans(c.model, c.options.space)) {  // no candidate needs less
    CHECK(screen_plan(c.model, p, c.hw, *cost).device_used_bytes >= one.closest_miss_bytes);
  }
  c.options.threads = 3;
  const SearchResult three = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(three.closest_miss.has_value());
  CHECK(three.closest_miss_bytes == one.closest_miss_bytes);
  CHECK(plan_to_json(*three.closest_miss) == plan_to_json(*one.closest_miss));
}

TEST_CASE("the search result does not depend on the number of threads") {
  Case c;
  c.options.threads = 1;
  const SearchResult one = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  c.options.threads = 3;
  const SearchResult three = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(one.plans.size() == three.plans.size());
  for (size_t i = 0; i < one.plans.size(); ++i) {
    CHECK(one.plans[i].prediction.iteration_time_s == three.plans[i].prediction.iteration_time_s);
  }
}

namespace {
// The top `keep` of two results: the same plans, in the same order, at the same times.
void check_same_best(const SearchResult& a, const SearchResult& b, size_t keep) {
  REQUIRE(a.plans.size() >= keep);
  REQUIRE(b.plans.size() >= keep);
  for (size_t i = 0; i < keep; ++i) {
    INFO("rank " << i + 1);
    CHECK(plan_to_json(a.plans[i].prediction.plan) == plan_to_json(b.plans[i].prediction.plan));
    CHECK(a.plans[i].prediction.iteration_time_s == b.plans[i].prediction.iteration_time_s);
  }
}
}  // namespace

TEST_CASE("simulation stops once no plan left can enter the best shown, and finds the same best as simulating all") {
  for (const Objective objective : {Objective::kTime, Objective::kCost}) {
    Case c;
    c.options.objective = objective;
    c.options.keep_best = 5;
    c.options.screen_margin = -1;  // every one of the best 200 screened
    const SearchResult all = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
    CHECK(all.simulated == 200);
    CHECK(all.screen_margin < 0);
    c.options.screen_margin = kScreenMargin;
    const SearchResult bounded = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
    CHECK(bounded.simulated < all.simulated);
    CHECK(bounded.stopped_early);
    CHECK_FALSE(all.stopped_early);
    CHECK(bounded.simulated % 8 == 0);  // whole rounds
    CHECK(bounded.screen_margin >= kScreenMargin);
    CHECK(bounded.screen_margin >= bounded.screen_overestimate);
    check_same_best(all, bounded, 5);
    // The screen's largest overestimate among the plans simulated: what the margin must cover.
    double most = 0;
    for (const RankedPlan& r : all.plans) most = std::max(most, r.screen_time_s / r.prediction.iteration_time_s - 1.0);
    CHECK(all.screen_overestimate == Approx(most).margin(1e-12));
    CHECK(all.screen_overestimate < kScreenMargin);
  }
}

TEST_CASE("a search ranked after one with better plans simulates only as far as its own best") {
  Case c;
  c.options.keep_best = 5;
  const SearchResult alone = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  c.options.rank_ceiling = alone.plans.front().prediction.iteration_time_s * 0.5;  // earlier searches' 5th best beats all of these
  const SearchResult after = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(after.simulated < alone.simulated);
  check_same_best(alone, after, 1);
  // A ceiling no plan reaches changes nothing.
  c.options.rank_ceiling = alone.plans.back().prediction.iteration_time_s * 10;
  const SearchResult loose = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(loose.simulated == alone.simulated);
}

TEST_CASE("a search whose GPU type has a better plan already, ranked after a full table, simulates none") {
  Case c;
  c.options.keep_best = 5;
  const SearchResult alone = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(!alone.plans.empty());
  const double best = objective_value(alone.plans.front(), c.options.objective);
  c.options.rank_ceiling = best * 0.5;  // the table is full of better plans
  c.options.gpu_type_best = best * 0.5;  // and another precision of this GPU beat every plan here
  const SearchResult beaten = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(beaten.simulated == 0);
  CHECK(beaten.plans.empty());
  CHECK(beaten.stopped_early);
  CHECK(beaten.feasible == alone.feasible);  // screened all the same
  // A GPU-type best this search can beat: it simulates until its own best is certain, as alone.
  c.options.gpu_type_best = best * 1.5;
  const SearchResult beats = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(beats.simulated > 0);
  CHECK(beats.simulated < alone.simulated);
  check_same_best(alone, beats, 1);
  // Without a full table the GPU type's best does not stop it.
  c.options.rank_ceiling = std::numeric_limits<double>::infinity();
  c.options.gpu_type_best = best * 0.5;
  const SearchResult table_open = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(table_open.simulated == alone.simulated);
}

TEST_CASE("a deadline and a budget for a token count prune the plans that miss them") {
  Case c;
  c.options.train_tokens = 1e10;
  const SearchResult free = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(!free.plans.empty());
  const double best_days = free.plans.front().train_days;
  CHECK(best_days > 0);
  c.options.deadline_days = best_days * 1.02;
  const SearchResult tight = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(tight.pruned.at("miss the deadline") > 0);
  for (const RankedPlan& p : tight.plans) CHECK(p.train_days <= best_days * 1.1);
  c.options.deadline_days = 0;
  c.options.budget_usd = 1.0;  // far too little
  const SearchResult broke = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  CHECK(broke.plans.empty());
  CHECK(broke.pruned.at("over the budget") > 0);
}

TEST_CASE("the Pareto front keeps only undominated plans") {
  Case c;
  const SearchResult r = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  const std::vector<size_t> front = pareto_front(r.plans);
  REQUIRE(!front.empty());
  for (size_t i : front) {
    for (const RankedPlan& other : r.plans) {
      const bool dominates = other.prediction.iteration_time_s < r.plans[i].prediction.iteration_time_s &&
                             other.prediction.usd_per_iteration < r.plans[i].prediction.usd_per_iteration &&
                             other.prediction.hardware.gpus <= r.plans[i].prediction.hardware.gpus;
      CHECK_FALSE(dominates);
    }
  }
}

TEST_CASE("the effective objectives rank plans by time or $ over goodput, and every plan carries its goodput") {
  Case c;
  c.options.train_tokens = 1e11;
  c.options.objective = Objective::kEffectiveTime;
  GoodputConfig goodput;
  goodput.failures.gpu_mtbf_hours = 100;  // a failure every ~3 h on 32 GPUs
  c.options.goodput = goodput;
  const SearchResult r = search_plans(c.model, c.hw, CostModelChoice{}, c.options);
  REQUIRE(r.plans.size() > 2);
  for (size_t i = 0; i < r.plans.size(); ++i) {
    REQUIRE(r.plans[i].goodput.has_value());
    CHECK(r.plans[i].goodput->goodput < 1.0);
    CHECK(objective_value(r.plans[i], Objective::kEffectiveTime) == Approx(r.plans[i].goodput->train_days_effective));
    if (i > 0) CHECK(objective_value(r.plans[i], c.options.objective) >= objective_value(r.plans[i - 1], c.options.objective));
  }
}

TEST_CASE("uneven pipelines: those that split the layers only with the embedding and loss counted, searched unless --no-uneven-pipeline") {
  const ModelSpec m = resolve_model("llama3-405b");  // 126 layers: pp 2 divides them, 4, 8 and 16 only the layers + 2
  PlanSpaceOptions space;
  CHECK(space.uneven_pipeline);  // the default
  space.uneven_pipeline = false;
  space.gpus = 16;
  space.global_batch = 32;
  space.max_micro_batch = 1;
  const auto pipelines = [&] {
    std::set<std::pair<int64_t, int64_t>> seen;  // pp, vpp
    enumerate_plans(m, space, [&](const ParallelPlan& p) {
      CHECK(validate_plan(p, m, "space").empty());
      seen.insert({p.pp, p.vpp});
    });
    return seen;
  };
  const auto even = pipelines();
  for (const auto& [pp, vpp] : even) CHECK(m.layers % (pp * vpp) == 0);
  CHECK(uneven_pipelines_not_searched(m, space) ==
        "pp 4, 8, 16 not searched: 126 layers split over them only with the embedding and the loss counted as a layer each "
        "(Megatron-Core's --account-for-embedding/loss-in-pipeline-split), left out by --no-uneven-pipeline");
  space.uneven_pipeline = true;
  const auto uneven = pipelines();
  CHECK(uneven.count({8, 1}) == 1);
  CHECK(uneven.count({16, 1}) == 1);
  CHECK(uneven.count({16, 8}) == 1);  // 128 virtual stages of one layer, the first and last of none
  CHECK(uneven.count({4, 2}) == 1);
  for (const auto& [pp, vpp] : uneven) CHECK((m.layers % (pp * vpp) == 0 || (m.layers + 2) % (pp * vpp) == 0));
  CHECK(uneven.size() > even.size());
  CHECK(uneven_pipelines_not_searched(m, space).empty());
  CHECK(uneven_pipelines_not_searched(resolve_model("llama3-70b"), PlanSpaceOptions{}).empty());  // 80 layers: nothing left out
}
