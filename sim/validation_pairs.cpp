// Pairs of published runs of one plan that differ in the GPU type or in the precision, and how
// well the predicted ratio of their throughputs matches the measured one.
#include "sim/validation_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>

namespace trainsim {

namespace {

// The group, model, GPU count, layout, batch, recompute and schedule after the defaults a run took.
std::string plan_key(const PublishedRun& run) {
  const ParallelPlan& p = run.plan;
  std::string key = run.group + "|" + run.model.name + "|" + std::to_string(run.gpus);
  for (const int64_t n : std::initializer_list<int64_t>{p.dp, p.tp, p.pp, p.cp, p.ep, p.vpp, p.micro_batch, p.global_batch, p.zero_stage,
                                                        static_cast<int64_t>(p.recompute), static_cast<int64_t>(p.sequence_parallel),
                                                        static_cast<int64_t>(p.schedule)}) {
    key += '|';
    key += std::to_string(n);
  }
  return key;
}

// GPU pairs keep the precision in the key and not the options: a recipe tunes its options per GPU
// (CUDA-graph scopes, dispatcher backends), both runs' options are priced, and the ratio a user
// asks about is the recipe's on each GPU.
std::string gpu_pair_key(const PublishedRun& run) { return plan_key(run) + "|" + to_string(run.plan.precision); }

// Precision pairs keep the GPU and every option but the FP8 ones (recipe, scaling, FP8 weights).
std::string precision_pair_key(const PublishedRun& run) {
  std::string key = plan_key(run) + "|" + run.gpu;
  std::vector<std::string> options;
  for (const std::string& o : run.options) {
    if (o.find("fp8") == std::string::npos && o.find("float8") == std::string::npos) options.push_back(o);
  }
  std::sort(options.begin(), options.end());
  for (const std::string& o : options) key += "|" + o;
  return key;
}

// The side of a pair a run is on: its GPU type, or its precision in Precision's order.
std::string side_of(const PublishedRun& run, PairKind kind) {
  if (kind == PairKind::kGpu) return run.gpu;
  return std::to_string(static_cast<int>(run.plan.precision));
}

}  // namespace

const char* to_string(PairKind kind) { return kind == PairKind::kGpu ? "gpu" : "precision"; }

std::vector<RunPair> same_plan_pairs(const ValidationResult& v, PairKind kind) {
  return pairs_by_key(v, kind, kind == PairKind::kGpu ? gpu_pair_key : precision_pair_key);
}

std::vector<RunPair> pairs_by_key(const ValidationResult& v, PairKind kind, const std::function<std::string(const PublishedRun&)>& key_of) {
  std::vector<std::string> keys;  // first appearance order
  std::map<std::string, std::map<std::string, std::vector<const RunResult*>>> by_key;
  for (const RunResult& r : v.runs) {
    if (!r.predicted || !r.error || r.run->measured_tokens_per_s_per_gpu <= 0) continue;
    const std::string key = key_of(*r.run);
    if (by_key.find(key) == by_key.end()) keys.push_back(key);
    by_key[key][side_of(*r.run, kind)].push_back(&r);
  }
  std::vector<RunPair> pairs;
  for (const std::string& key : keys) {
    const auto& sides = by_key[key];
    for (auto a = sides.begin(); a != sides.end(); ++a) {
      for (auto b = std::next(a); b != sides.end(); ++b) {
        for (const RunResult* from : a->second) {
          for (const RunResult* to : b->second) {
            RunPair pair{kind, from, to};
            pair.measured_ratio = to->run->measured_tokens_per_s_per_gpu / from->run->measured_tokens_per_s_per_gpu;
            pair.predicted_ratio = to->predicted_tokens_per_s_per_gpu / from->predicted_tokens_per_s_per_gpu;
            pairs.push_back(pair);
          }
        }
      }
    }
  }
  return pairs;
}

PairSummary summarize_pairs(const std::vector<RunPair>& pairs) {
  PairSummary s;
  double sum = 0;
  for (const RunPair& p : pairs) {
    const double e = std::fabs(p.error());
    sum += e;
    s.max_abs_error = std::max(s.max_abs_error, e);
    s.within_ten_percent += e <= 0.10 ? 1 : 0;
    ++s.count;
  }
  s.mean_abs_error = s.count > 0 ? sum / static_cast<double>(s.count) : 0.0;
  return s;
}

}  // namespace trainsim
