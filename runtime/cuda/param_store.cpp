// ParamStore: flat layout from the CPU model's parameters, upload, bf16 working copy.
#include "runtime/cuda/param_store.hpp"

#include <algorithm>
#include <cstdlib>

#include "common/errors.hpp"
#include "runtime/cuda_kernels/cuda_check.cuh"
#include "runtime/cuda_kernels/kernels.cuh"

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

ParamLayout layout_params(const std::vector<cpu::Param>& params, const cpu::StageLayout& layout, int64_t shards) {
  std::vector<size_t> order(params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(group_of(params[a].name), layer_of(params[a].name)) <
           std::make_pair(group_of(params[b].name), layer_of(params[b].name));
  });
  ParamLayout out;
  out.source = order;
  int64_t at = 0;
  for (const size_t i : order) {
    const cpu::Param& p = params[i];
    ParamView v;
    v.name = p.name;
    v.offset = at;
    v.rows = p.value.rows();
    v.cols = p.value.cols();
    v.tp_split = p.tp_split;
    // The GPU stage gathers the embedding's input gradient over TP, so wpe's gradient is whole.
    v.sp_partial = p.sp_partial_grad && p.name != "wpe";
    const int64_t layer = layer_of(p.name);
    v.layer = layer >= 0 ? layout.local_layer(layer) : -1;
    if (v.layer >= 0) {
      if (static_cast<size_t>(v.layer) >= out.layer_ranges.size()) out.layer_ranges.resize(static_cast<size_t>(v.layer) + 1, {at, at});
      out.layer_ranges[static_cast<size_t>(v.layer)].second = at + v.count();
    }
    at = round_up(at + v.count(), ParamLayout::kAlignElements);
    out.views.push_back(v);
  }
  out.padded_count = round_up(std::max<int64_t>(at, 1), ParamLayout::kAlignElements * shards);
  TRAINSIM_ASSERT(static_cast<int64_t>(out.layer_ranges.size()) == layout.layer_count(),
                  "ParamStore: the CPU model's layer names do not match its layout");
  return out;
}

ParamStore::ParamStore(cpu::StageModel& initial, int64_t shards, DeviceArena& arena, cudaStream_t stream) {
  layout_ = layout_params(initial.params(), initial.layout(), shards);
  initial_values_.assign(static_cast<size_t>(layout_.padded_count), 0.0f);
  for (size_t i = 0; i < layout_.views.size(); ++i) {
    const cpu::Matrix& value = initial.params()[layout_.source[i]].value;
    std::copy(value.data(), value.data() + value.size(), initial_values_.begin() + layout_.views[i].offset);
  }
  weights_ = DeviceBuffer<__nv_bfloat16>(arena, layout_.padded_count, "bf16 working weights");
  grads_ = DeviceBuffer<float>(arena, layout_.padded_count, "fp32 gradients");
  // The gradient buffer carries the fp32 values to the device once, then starts at zero.
  check_cuda(cudaMemcpyAsync(grads_.data(), initial_values_.data(), grads_.bytes(), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (initial weights)");
  fp32_to_bf16(grads_.data(), weights_.data(), layout_.padded_count, stream);
  check_cuda(cudaMemsetAsync(grads_.data(), 0, grads_.bytes(), stream), "cudaMemsetAsync (gradients)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (initial weights)");
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
