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

class ParamStore {
 public:
  static constexpr int64_t kAlignElements = 128;

  // Uploads `initial`'s values (fp32, converted to the bf16 working copy) on `stream` and waits.
  ParamStore(cpu::StageModel& initial, int64_t shards, DeviceArena& arena, cudaStream_t stream);

  const std::vector<ParamView>& views() const { return views_; }
  const ParamView& view(const std::string& name) const;  // InternalError when there is none
  bool has(const std::string& name) const;
  int64_t padded_count() const { return padded_count_; }
  int64_t layer_count() const { return static_cast<int64_t>(layer_ranges_.size()); }
  // [begin, end) elements of a local layer's tensors.
  std::pair<int64_t, int64_t> layer_range(int64_t layer) const { return layer_ranges_[static_cast<size_t>(layer)]; }

  __nv_bfloat16* weights() const { return weights_.data(); }  // (padded_count)
  float* grads() const { return grads_.data(); }              // (padded_count)
  __nv_bfloat16* weight(const std::string& name) const { return weights_.data() + view(name).offset; }
  float* grad(const std::string& name) const { return grads_.data() + view(name).offset; }

  // The initial fp32 values, flat and padded, for the optimizer's master copy (host memory).
  const std::vector<float>& initial_values() const { return initial_values_; }
  void drop_initial_values() { initial_values_ = {}; }

 private:
  std::vector<ParamView> views_;
  std::vector<std::pair<int64_t, int64_t>> layer_ranges_;
  int64_t padded_count_ = 0;
  DeviceBuffer<__nv_bfloat16> weights_;
  DeviceBuffer<float> grads_;
  std::vector<float> initial_values_;
};

}  // namespace trainsim::cuda
