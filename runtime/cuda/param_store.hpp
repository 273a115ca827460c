// A GPU stage's parameters in flat buffers with one view per tensor: bf16 working weights (what
// the kernels read) and fp32 gradients (main grads, accumulated over micro-batches). Tensors start
// on 128-element boundaries (256-byte aligned for cuBLASLt) and the whole is padded to a multiple
// of 128 x `shards` (ZeRO shards over DP); padding stays zero. The fp32 master weights live with
// the optimizer (cuda_optimizer.hpp). Initial values come from runtime/stage_weights.hpp (the
// CPU backend's too), so both backends start from the identical model. Order: wte, wpe, the layers
// (each layer's tensors contiguous: a layer range is a DP bucket), the rest (final norm).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/device_arena.hpp"
#include "runtime/stage_layout.hpp"
#include "runtime/stage_weights.hpp"

namespace trainsim::cuda {

struct ParamView {
  std::string name;         // as in the CPU model: "wte", "layer3.w_qkv", "lnf_g", ...
  int64_t offset = 0;       // elements into the flat buffers
  int64_t rows = 0, cols = 0;
  bool tp_split = false;    // a different slice on each TP rank
  bool sp_partial = false;  // with SP: this rank's gradient covers only its tokens (summed over TP)
  bool expert = false;      // an MoE expert's: held by one EP rank, reduced over the expert-DP ranks
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
  // ZeRO-3 units, gathered and reduce-scattered whole (layouts made with shard_units only): the
  // tensors before the layers (wte, wpe), each layer, the tensors after them (final norm, LM head),
  // in buffer order; each padded to a multiple of kAlignElements x shards, empty ones left out.
  std::vector<std::pair<int64_t, int64_t>> units;
  std::vector<int64_t> unit_of_layer;  // units[unit_of_layer[l]] is local layer l's

  // [begin, end) of ZeRO shard `index` of `shards` (the shards given to layout_params).
  std::pair<int64_t, int64_t> shard(int64_t shards, int64_t index) const;
  // The unit holding element `offset`.
  int64_t unit_at(int64_t offset) const;
};

// A CPU stage model's parameters (`params`, built for `layout`) in the order of the file comment,
// each on a kAlignElements boundary, the whole padded for `shards` ZeRO shards; with `shard_units`
// (ZeRO-3) every unit is padded so that each splits into `shards` aligned pieces, and, the units
// starting aligned, every layer's tensors lie at the same offsets from its start.
ParamLayout layout_params(const std::vector<runtime::Param>& params, const runtime::StageLayout& layout, int64_t shards,
                          bool shard_units = false);

// ZeRO-3: a rank keeps shard `rank` of every unit, one after another (the shard space). Unit u's
// piece is elements [units[u].first + rank x size_u / shards, + size_u / shards) of the flat
// buffer, at shard_offset[u] of the shard space.
struct ShardSpace {
  int64_t shards = 1, rank = 0;
  std::vector<int64_t> shard_offset;  // per unit
  int64_t count = 0;                  // elements this rank keeps
  static ShardSpace of(const ParamLayout& layout, int64_t shards, int64_t rank);
  int64_t piece(const ParamLayout& layout, int64_t unit) const {  // elements of a unit's piece
    return (layout.units[static_cast<size_t>(unit)].second - layout.units[static_cast<size_t>(unit)].first) / shards;
  }
  // This rank's pieces of `flat` (padded_count values), in shard-space order.
  std::vector<float> take(const ParamLayout& layout, const std::vector<float>& flat) const;
  // [from, to) runs of the shard space whose gradients count in the global norm (counts[i] for
  // layout.views[i]); neighbouring runs are joined.
  std::vector<std::pair<int64_t, int64_t>> norm_runs(const ParamLayout& layout, const std::vector<bool>& counts) const;
};

class ParamStore {
 public:
  static constexpr int64_t kAlignElements = ParamLayout::kAlignElements;

  // Uploads `initial`'s values (fp32, converted to the bf16 working copy) on `stream` and waits.
  // With `zero3_rank` >= 0 (ZeRO-3 over `shards` DP ranks) the store keeps only that rank's shard
  // space (bf16 weights and fp32 gradients) and, in place of the flat buffers, two gather buffers
  // and two gradient buffers of one layer each (layer l uses number l % 2) and whole buffers for
  // the units outside the layers: weight(name) and grad(name) point there, and the trainer
  // all-gathers a layer's weights before its use and reduce-scatters its gradients after.
  ParamStore(const runtime::StageWeights& initial, const runtime::StageLayout& layout, int64_t shards, DeviceArena& arena, cudaStream_t stream, int64_t zero3_rank = -1);

  const ParamLayout& layout() const { return layout_; }
  const std::vector<ParamView>& views() const { return layout_.views; }
  const ParamView& view(const std::string& name) const;  // InternalError when there is none
  bool has(const std::string& name) const;
  int64_t padded_count() const { return layout_.padded_count; }
  int64_t layer_count() const { return static_cast<int64_t>(layout_.layer_ranges.size()); }
  // [begin, end) elements of a local layer's tensors.
  std::pair<int64_t, int64_t> layer_range(int64_t layer) const { return layout_.layer_ranges[static_cast<size_t>(layer)]; }

  // The flat buffers (padded_count); not with ZeRO-3.
  __nv_bfloat16* weights() const;
  float* grads() const;
  __nv_bfloat16* weight(const std::string& name) const { return weight_of(view(name)); }
  float* grad(const std::string& name) const { return grad_of(view(name)); }
  __nv_bfloat16* weight_of(const ParamView& v) const;
  float* grad_of(const ParamView& v) const;

  // ZeRO-3 (zero3() only): the shard space, this rank's weights and gradients in it, and where a
  // unit's whole weights and gradients are used (layer units: the buffers of number l % 2).
  bool zero3() const { return zero3_; }
  const ShardSpace& shard_space() const { return space_; }
  __nv_bfloat16* weight_shards() const { return weight_shards_.data(); }
  float* grad_shards() const { return grad_shards_.data(); }
  __nv_bfloat16* unit_weights(int64_t unit) const;
  float* unit_grads(int64_t unit) const;
  // The same, or null for a tensor the model does not have (biases of bias-free models, wpe with RoPE).
  __nv_bfloat16* weight_if_any(const std::string& name) const { return has(name) ? weight(name) : nullptr; }
  float* grad_if_any(const std::string& name) const { return has(name) ? grad(name) : nullptr; }

  // The initial fp32 values, flat and padded, for the optimizer's master copy (host memory).
  const std::vector<float>& initial_values() const { return initial_values_; }
  void drop_initial_values() { initial_values_ = {}; }

 private:
  // The unit of `v` and the buffers its whole weights and gradients live in (ZeRO-3).
  int64_t unit_of(const ParamView& v) const { return layout_.unit_at(v.offset); }

  ParamLayout layout_;
  DeviceBuffer<__nv_bfloat16> weights_;
  DeviceBuffer<float> grads_;
  std::vector<float> initial_values_;
  bool zero3_ = false;
  ShardSpace space_;
  DeviceBuffer<__nv_bfloat16> weight_shards_;
  DeviceBuffer<float> grad_shards_;
  DeviceBuffer<__nv_bfloat16> layer_weights_[2];
  DeviceBuffer<float> layer_grads_[2];
  std::vector<DeviceBuffer<__nv_bfloat16>> outer_weights_;  // per unit; empty for layer units
  std::vector<DeviceBuffer<float>> outer_grads_;
};

}  // namespace trainsim::cuda
