// ParamStore: flat layout from the CPU model's parameters, upload, bf16 working copy.
#include "runtime/cuda/param_store.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

namespace {

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// "layer12.w_qkv" -> 12; -1 for names outside the layers.
int64_t layer_of(const std::string& name) {
  if (name.rfind("layer", 0) != 0) return -1;
  return std::strtoll(name.c_str() + 5, nullptr, 10);
}

// wte, wpe, then layers by number, then the rest; the CPU model's order within each.
int group_of(const std::string& name) {
  if (name == "wte") return 0;
  if (name == "wpe") return 1;
  return layer_of(name) >= 0 ? 2 : 3;
}

}  // namespace

std::pair<int64_t, int64_t> ParamLayout::shard(int64_t shards, int64_t index) const {
  TRAINSIM_ASSERT(shards >= 1 && 0 <= index && index < shards && padded_count % (kAlignElements * shards) == 0,
                  "ParamLayout::shard: the layout is not padded for " + std::to_string(shards) + " shards");
  const int64_t size = padded_count / shards;
  return {index * size, (index + 1) * size};
}

int64_t ParamLayout::unit_at(int64_t offset) const {
  for (size_t u = 0; u < units.size(); ++u) {
    if (offset >= units[u].first && offset < units[u].second) return static_cast<int64_t>(u);
  }
  fail_internal("unit_at", __FILE__, __LINE__, "element " + std::to_string(offset) + " lies in no ZeRO-3 unit");
}

ParamLayout layout_params(const std::vector<runtime::Param>& params, const runtime::StageLayout& layout, int64_t shards, bool shard_units) {
  std::vector<size_t> order(params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(group_of(params[a].name), layer_of(params[a].name)) <
           std::make_pair(group_of(params[b].name), layer_of(params[b].name));
  });
  ParamLayout out;
  out.source = order;
  int64_t at = 0, unit_begin = 0, unit_key = -2;  // unit_key: -1 before the layers, the layer, or INT64_MAX after
  const auto close_unit = [&]() {
    if (!shard_units) return;
    at = round_up(at, ParamLayout::kAlignElements * shards);
    if (at > unit_begin) out.units.emplace_back(unit_begin, at);
    unit_begin = at;
  };
  for (const size_t i : order) {
    const runtime::Param& p = params[i];
    const int64_t layer_number = layer_of(p.name);
    const int64_t key = layer_number >= 0 ? layer_number : (group_of(p.name) < 2 ? -1 : INT64_MAX);
    if (key != unit_key) {
      close_unit();
      unit_key = key;
    }
    ParamView v;
    v.name = p.name;
    v.offset = at;
    v.rows = p.value.rows();
    v.cols = p.value.cols();
    v.tp_split = p.tp_split;
    // The GPU stage gathers the embedding's input gradient over TP, so wpe's gradient is whole.
    v.sp_partial = p.sp_partial_grad && p.name != "wpe";
    v.expert = p.expert;
    const int64_t layer = layer_of(p.name);
    v.layer = layer >= 0 ? layout.local_layer(layer) : -1;
    if (v.layer >= 0) {
      if (static_cast<size_t>(v.layer) >= out.layer_ranges.size()) out.layer_ranges.resize(static_cast<size_t>(v.layer) + 1, {at, at});
      out.layer_ranges[static_cast<size_t>(v.layer)].second = at + v.count();
    }
    at = round_up(at + v.count(), ParamLayout::kAlignElements);
    out.views.push_back(v);
  }
  close_unit();
  out.padded_count = round_up(std::max<int64_t>(at, 1), ParamLayout::kAlignElements * shards);
  if (shard_units) {
    for (const auto& [begin, end] : out.layer_ranges) out.unit_of_layer.push_back(out.unit_at(begin));
  }
  TRAINSIM_ASSERT(static_cast<int64_t>(out.layer_ranges.size()) == layout.layer_count(),
                  "ParamStore: the CPU model's layer names do not match its layout");
  return out;
}

ShardSpace ShardSpace::of(const ParamLayout& layout, int64_t shards, int64_t rank) {
  TRAINSIM_ASSERT(shards >= 1 && 0 <= rank && rank < shards, "ShardSpace: rank inside the shards");
  ShardSpace s;
  s.shards = shards;
  s.rank = rank;
  for (const auto& [begin, end] : layout.units) {
    TRAINSIM_ASSERT((end - begin) % (ParamLayout::kAlignElements * shards) == 0, "ShardSpace: the layout's units are not padded for the shards");
    s.shard_offset.push_back(s.count);
    s.count += (end - begin) / shards;
  }
  return s;
}

std::vector<float> ShardSpace::take(const ParamLayout& layout, const std::vector<float>& flat) const {
  std::vector<float> out(static_cast<size_t>(count));
  for (size_t u = 0; u < layout.units.size(); ++u) {
    const int64_t n = piece(layout, static_cast<int64_t>(u)), from = layout.units[u].first + rank * n;
    std::copy(flat.begin() + from, flat.begin() + from + n, out.begin() + shard_offset[u]);
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> ShardSpace::norm_runs(const ParamLayout& layout, const std::vector<bool>& counts) const {
  TRAINSIM_ASSERT(counts.size() == layout.views.size(), "ShardSpace::norm_runs: one norm flag per parameter");
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (size_t i = 0; i < layout.views.size(); ++i) {
    if (!counts[i]) continue;
    const ParamView& v = layout.views[i];
    const int64_t u = layout.unit_at(v.offset), n = piece(layout, u);
    const int64_t mine = layout.units[static_cast<size_t>(u)].first + rank * n;  // this rank's piece: [mine, mine + n)
    const int64_t from = std::max(v.offset, mine), to = std::min(v.offset + v.count(), mine + n);
    if (from >= to) continue;
    const int64_t a = shard_offset[static_cast<size_t>(u)] + from - mine, b = a + to - from;
    if (!runs.empty() && runs.back().second == a) {
      runs.back().second = b;
    } else {
      runs.emplace_back(a, b);
    }
  }
  return runs;
}

ParamStore::ParamStore(const runtime::StageWeights& initial, const runtime::StageLayout& layout, int64_t shards, DeviceArena& arena, cudaStream_t stream, int64_t zero3_rank)
    : zero3_(zero3_rank >= 0) {
  layout_ = layout_params(initial.params, layout, shards, zero3_);
  initial_values_.assign(static_cast<size_t>(layout_.padded_count), 0.0f);
  for (size_t i = 0; i < layout_.views.size(); ++i) {
    const cpu::Matrix& value = initial.params[layout_.source[i]].value;
    std::copy(value.data(), value.data() + value.size(), initial_values_.begin() + layout_.views[i].offset);
  }
  if (!zero3_) {
    weights_ = DeviceBuffer<__nv_bfloat16>(arena, layout_.padded_count, "bf16 working weights");
    grads_ = DeviceBuffer<float>(arena, layout_.padded_count, "fp32 gradients");
    // The gradient buffer carries the fp32 values to the device once, then starts at zero.
    check_cuda(cudaMemcpyAsync(grads_.data(), initial_values_.data(), grads_.bytes(), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (initial weights)");
    fp32_to_bf16(grads_.data(), weights_.data(), layout_.padded_count, stream);
    check_cuda(cudaMemsetAsync(grads_.data(), 0, grads_.bytes(), stream), "cudaMemsetAsync (gradients)");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (initial weights)");
    return;
  }
  space_ = ShardSpace::of(layout_, shards, zero3_rank);
  weight_shards_ = DeviceBuffer<__nv_bfloat16>(arena, space_.count, "ZeRO-3 bf16 weight shards");
  grad_shards_ = DeviceBuffer<float>(arena, space_.count, "ZeRO-3 fp32 gradient shards");
  int64_t largest_layer = 0;
  for (int64_t u : layout_.unit_of_layer) {
    largest_layer = std::max(largest_layer, layout_.units[static_cast<size_t>(u)].second - layout_.units[static_cast<size_t>(u)].first);
  }
  for (int k = 0; k < 2 && largest_layer > 0; ++k) {
    layer_weights_[k] = DeviceBuffer<__nv_bfloat16>(arena, largest_layer, "ZeRO-3 gathered layer weights");
    layer_grads_[k] = DeviceBuffer<float>(arena, largest_layer, "ZeRO-3 layer gradients");
  }
  outer_weights_.resize(layout_.units.size());
  outer_grads_.resize(layout_.units.size());
  for (size_t u = 0; u < layout_.units.size(); ++u) {
    if (std::find(layout_.unit_of_layer.begin(), layout_.unit_of_layer.end(), static_cast<int64_t>(u)) != layout_.unit_of_layer.end()) continue;
    const int64_t n = layout_.units[u].second - layout_.units[u].first;
    outer_weights_[u] = DeviceBuffer<__nv_bfloat16>(arena, n, "ZeRO-3 gathered embeddings and final norm");
    outer_grads_[u] = DeviceBuffer<float>(arena, n, "ZeRO-3 embedding and final norm gradients");
  }
  const std::vector<float> mine = space_.take(layout_, initial_values_);
  check_cuda(cudaMemcpyAsync(grad_shards_.data(), mine.data(), grad_shards_.bytes(), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (initial weight shards)");
  fp32_to_bf16(grad_shards_.data(), weight_shards_.data(), space_.count, stream);
  check_cuda(cudaMemsetAsync(grad_shards_.data(), 0, grad_shards_.bytes(), stream), "cudaMemsetAsync (gradient shards)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (initial weight shards)");
}

__nv_bfloat16* ParamStore::weights() const {
  TRAINSIM_ASSERT(!zero3_, "ParamStore::weights: no flat buffer with ZeRO-3");
  return weights_.data();
}

float* ParamStore::grads() const {
  TRAINSIM_ASSERT(!zero3_, "ParamStore::grads: no flat buffer with ZeRO-3");
  return grads_.data();
}

__nv_bfloat16* ParamStore::unit_weights(int64_t unit) const {
  TRAINSIM_ASSERT(zero3_, "ParamStore::unit_weights: ZeRO-3 only");
  const auto layer = std::find(layout_.unit_of_layer.begin(), layout_.unit_of_layer.end(), unit);
  if (layer == layout_.unit_of_layer.end()) return outer_weights_[static_cast<size_t>(unit)].data();
  return layer_weights_[(layer - layout_.unit_of_layer.begin()) % 2].data();
}

float* ParamStore::unit_grads(int64_t unit) const {
  TRAINSIM_ASSERT(zero3_, "ParamStore::unit_grads: ZeRO-3 only");
  const auto layer = std::find(layout_.unit_of_layer.begin(), layout_.unit_of_layer.end(), unit);
  if (layer == layout_.unit_of_layer.end()) return outer_grads_[static_cast<size_t>(unit)].data();
  return layer_grads_[(layer - layout_.unit_of_layer.begin()) % 2].data();
}

__nv_bfloat16* ParamStore::weight_of(const ParamView& v) const {
  if (!zero3_) return weights_.data() + v.offset;
  const int64_t u = unit_of(v);
  return unit_weights(u) + (v.offset - layout_.units[static_cast<size_t>(u)].first);
}

float* ParamStore::grad_of(const ParamView& v) const {
  if (!zero3_) return grads_.data() + v.offset;
  const int64_t u = unit_of(v);
  return unit_grads(u) + (v.offset - layout_.units[static_cast<size_t>(u)].first);
}

const ParamView& ParamStore::view(const std::string& name) const {
  for (const ParamView& v : layout_.views) {
    if (v.name == name) return v;
  }
  fail_internal("view(name)", __FILE__, __LINE__, "the GPU stage has no parameter \"" + name + "\"");
}

bool ParamStore::has(const std::string& name) const {
  return std::any_of(layout_.views.begin(), layout_.views.end(), [&](const ParamView& v) { return v.name == name; });
}

}  // namespace trainsim::cuda
