// Where a plan's transformer layers go: each virtual pipeline stage's count (even, with explicit
// first/last-stage counts, or with the embedding and loss counted as layers), each rank's and
// chunk's share under Megatron's interleaving or ZB-V's V placement (place_of_virtual_stage).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "plan/parallel_plan.hpp"

namespace trainsim {

namespace {
std::string s(int64_t x) { return std::to_string(x); }
}  // namespace

std::vector<int64_t> virtual_stage_layers(const ModelSpec& m, const ParallelPlan& p) {
  const int64_t stages = p.pp * p.vpp;
  if (!p.pipeline_layout.empty()) return p.pipeline_layout;
  std::vector<int64_t> layers(stages, 0);
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int64_t middle_stages = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
    const int64_t middle_layers = m.layers - p.first_stage_layers - p.last_stage_layers;
    for (int64_t stage = 0; stage < p.pp; ++stage) {
      int64_t on_stage = middle_stages > 0 ? middle_layers / middle_stages : 0;
      if (stage == 0 && p.first_stage_layers > 0) on_stage = p.first_stage_layers;
      if (stage == p.pp - 1 && p.last_stage_layers > 0) on_stage = p.last_stage_layers;
      for (int64_t c = 0; c < p.vpp; ++c) layers[virtual_stage_at(v_placement(p.schedule), p.pp, stage, c)] = on_stage / p.vpp;
    }
    return layers;
  }
  if (m.layers % stages != 0 && (m.layers + 2) % stages == 0) {
    std::fill(layers.begin(), layers.end(), (m.layers + 2) / stages);
    layers.front() -= 1;
    layers.back() -= 1;
    return layers;
  }
  for (int64_t vs = 0; vs < stages; ++vs) layers[vs] = m.layers / stages + (vs < m.layers % stages ? 1 : 0);
  return layers;
}

int64_t layers_on_stage(const ModelSpec& m, const ParallelPlan& p, int64_t stage) {
  const std::vector<int64_t> layers = virtual_stage_layers(m, p);
  int64_t on_stage = 0;
  for (int64_t c = 0; c < p.vpp; ++c) on_stage += layers[virtual_stage_at(v_placement(p.schedule), p.pp, stage, c)];
  return on_stage;
}

LayerRange layers_of_chunk(const ModelSpec& m, const ParallelPlan& p, int64_t stage, int64_t chunk) {
  const std::vector<int64_t> layers = virtual_stage_layers(m, p);
  const int64_t vs = virtual_stage_at(v_placement(p.schedule), p.pp, stage, chunk);
  LayerRange r;
  for (int64_t i = 0; i < vs; ++i) r.first += layers[i];
  r.last = r.first + layers[vs];
  return r;
}

int64_t dense_layers_of_chunk(const ModelSpec& m, const ParallelPlan& p, int64_t stage, int64_t chunk) {
  const int64_t dense = m.moe ? m.moe->dense_layers : 0;
  if (dense <= 0) return 0;
  const LayerRange range = layers_of_chunk(m, p, stage, chunk);
  return std::max<int64_t>(0, std::min(range.last, dense) - range.first);
}

int64_t layers_run_by(const std::vector<int64_t>& layers, const ModelSpec& m, const ParallelPlan& p, int64_t vs) {
  return layers[static_cast<size_t>(vs)] + (vs == p.pp * p.vpp - 1 ? m.mtp_layers : 0);
}

std::string describe_stage_layers(const ModelSpec& m, const ParallelPlan& p) {
  std::vector<std::pair<int64_t, int64_t>> runs;  // (layers, stages in a row)
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    const int64_t layers = layers_on_stage(m, p, stage);
    if (!runs.empty() && runs.back().first == layers) ++runs.back().second;
    else runs.emplace_back(layers, 1);
  }
  const std::string mtp = m.mtp_layers > 0 ? " (+ " + s(m.mtp_layers) + " multi-token-prediction layer" + (m.mtp_layers > 1 ? "s" : "") +
                                                  " on the last)" : "";
  if (runs.size() <= 1) return mtp.empty() ? "" : s(runs.front().first) + (runs.front().second > 1 ? " x " + s(runs.front().second) : "") + mtp;
  std::string out;
  for (const auto& [layers, count] : runs) out += (out.empty() ? "" : ", ") + s(layers) + (count > 1 ? " x " + s(count) : "");
  return out + mtp;
}

}  // namespace trainsim
