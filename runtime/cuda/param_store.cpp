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

ParamStore::ParamStore(cpu::StageModel& initial, int64_t shards, DeviceArena& arena, cudaStream_t stream) {
  std::vector<const cpu::Param*> order;
  for (const cpu::Param& p : initial.params()) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const cpu::Param* a, const cpu::Param* b) {
    return std::make_pair(group_of(a->name), layer_of(a->name)) < std::make_pair(group_of(b->name), layer_of(b->name));
  });
  const int64_t first_layer = initial.layout().first_layer;
  int64_t at = 0;
  for (const cpu::Param* p : order) {
    ParamView v;
    v.name = p->name;
    v.offset = at;
    v.rows = p->value.rows();
    v.cols = p->value.cols();
    v.tp_split = p->tp_split;
    // The GPU stage gathers the embedding's input gradient over TP, so wpe's gradient is whole.
    v.sp_partial = p->sp_partial_grad && p->name != "wpe";
    const int64_t layer = layer_of(p->name);
    v.layer = layer >= 0 ? layer - first_layer : -1;
    if (v.layer >= 0) {
      if (static_cast<size_t>(v.layer) >= layer_ranges_.size()) layer_ranges_.resize(static_cast<size_t>(v.layer) + 1, {at, at});
      layer_ranges_[static_cast<size_t>(v.layer)].second = at + v.count();
    }
    at = round_up(at + v.count(), kAlignElements);
    views_.push_back(v);
  }
  padded_count_ = round_up(std::max<int64_t>(at, 1), kAlignElements * shards);
  TRAINSIM_ASSERT(static_cast<int64_t>(layer_ranges_.size()) == initial.layout().last_layer - initial.layout().first_layer,
                  "ParamStore: the CPU model's layer names do not match its layout");

  initial_values_.assign(static_cast<size_t>(padded_count_), 0.0f);
  for (size_t i = 0; i < order.size(); ++i) {
    std::copy(order[i]->value.data(), order[i]->value.data() + order[i]->value.size(), initial_values_.begin() + views_[i].offset);
  }
  weights_ = DeviceBuffer<__nv_bfloat16>(arena, padded_count_, "bf16 working weights");
  grads_ = DeviceBuffer<float>(arena, padded_count_, "fp32 gradients");
  // The gradient buffer carries the fp32 values to the device once, then starts at zero.
  check_cuda(cudaMemcpyAsync(grads_.data(), initial_values_.data(), grads_.bytes(), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (initial weights)");
  fp32_to_bf16(grads_.data(), weights_.data(), padded_count_, stream);
  check_cuda(cudaMemsetAsync(grads_.data(), 0, grads_.bytes(), stream), "cudaMemsetAsync (gradients)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (initial weights)");
}

const ParamView& ParamStore::view(const std::string& name) const {
  for (const ParamView& v : views_) {
    if (v.name == name) return v;
  }
  fail_internal("view(name)", __FILE__, __LINE__, "the GPU stage has no parameter \"" + name + "\"");
}

bool ParamStore::has(const std::string& name) const {
  return std::any_of(views_.begin(), views_.end(), [&](const ParamView& v) { return v.name == name; });
}

}  // namespace trainsim::cuda
