// A GPU stage's parameters in flat buffers with one view per tensor: bf16 working weights (what
// the kernels read) and fp32 gradients (main grads, accumulated over micro-batches). Tensors start
// on 128-element boundaries (256-byte aligned for cuBLASLt) and the whole is padded to a multiple
// of 128 x `shards` (ZeRO shards over DP); padding stays zero. The fp32 master weights live with
// the optimizer (cuda_optimizer.hpp). Initial values come from a cpu::StageModel with the same
// layout and seed, so both backends start from the identical model. Order: wte, wpe, the layers
// (each layer's tensors contiguous: a layer range is a DP bucket), the rest (final norm).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu_model.hpp"
#include "runtime/cuda/device_arena.hpp"

namespace trainsim::cuda {

struct ParamView {
  std::string name;         // as in the CPU model: "wte", "layer3.w_qkv", "lnf_g", ...
  int64_t offset = 0;       // elements into the flat buffers
  int64_t rows = 0, cols = 0;
  bool tp_split = false;    // a different slice on each TP rank
  bool sp_partial = false;  // with SP: this rank's gradient covers only its tokens (summed over TP)
  int64_t layer = -1;       // local layer index; -1 outside the layers
  int64_t count() const { return rows * cols; }
};

// The flat layout of a stage's parameters (host only, no device): what ParamStore allocates.
struct ParamLayout {
  static constexpr int64_t kAlignElements = 128;  // 256 bytes of bf16

  std::vector<ParamView> views;                           // in buffer order
  std::vector<size_t> source;                             // views[i] is the CPU model's params()[source[i]]
  std::vector<std::pair<int64_t, int64_t>> layer_ranges;  // [begin, end) elements of each local layer
  int64_t padded_count = 0;                               // a multiple of kAlignElements x shards

  // [begin, end) of ZeRO shard `index` of `shards` (the shards given to layout_params).
  std::pair<int64_t, int64_t> shard(int64_t shards, int64_t index) const;
};

// A CPU stage model's parameters (`params`, built for `layout`) in the order of the file comment,
// each on a kAlignElements boundary, the whole padded for `shards` ZeRO shards.
ParamLayout layout_params(const std::vector<cpu::Param>& params, const cpu::StageLayout& layout, int64_t shards);

class ParamStore {
 public:
  static constexpr int64_t kAlignElements = ParamLayout::kAlignElements;

  // Uploads `initial`'s values (fp32, converted to the bf16 working copy) on `stream` and waits.
  ParamStore(cpu::StageModel& initial, int64_t shards, DeviceArena& arena, cudaStream_t stream);

  const ParamLayout& layout() const { return layout_; }
  const std::vector<ParamView>& views() const { return layout_.views; }
  const ParamView& view(const std::string& name) const;  // InternalError when there is none
  bool has(const std::string& name) const;
  int64_t padded_count() const { return layout_.padded_count; }
  int64_t layer_count() const { return static_cast<int64_t>(layout_.layer_ranges.size()); }
  // [begin, end) elements of a local layer's tensors.
  std::pair<int64_t, int64_t> layer_range(int64_t layer) const { return layout_.layer_ranges[static_cast<size_t>(layer)]; }

  __nv_bfloat16* weights() const { return weights_.data(); }  // (padded_count)
  float* grads() const { return grads_.data(); }              // (padded_count)
  __nv_bfloat16* weight(const std::string& name) const { return weights_.data() + view(name).offset; }
  float* grad(const std::string& name) const { return grads_.data() + view(name).offset; }
  // The same, or null for a tensor the model does not have (biases of bias-free models, wpe with RoPE).
  __nv_bfloat16* weight_if_any(const std::string& name) const { return has(name) ? weight(name) : nullptr; }
  float* grad_if_any(const std::string& name) const { return has(name) ? grad(name) : nullptr; }

  // The initial fp32 values, flat and padded, for the optimizer's master copy (host memory).
  const std::vector<float>& initial_values() const { return initial_values_; }
  void drop_initial_values() { initial_values_ = {}; }

 private:
  ParamLayout layout_;
  DeviceBuffer<__nv_bfloat16> weights_;
  DeviceBuffer<float> grads_;
  std::vector<float> initial_values_;
};

}  // namespace trainsim::cuda
