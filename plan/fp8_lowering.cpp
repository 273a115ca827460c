// FP8 training as Transformer Engine runs it under Megatron-Core (delayed scaling, Megatron-LM's
// --fp8-recipe and NeMo's fp8_recipe default; per-tensor current scaling, MXFP8 and NVFP4 below).
// Every linear's GEMMs take quantized operands; what that adds beside the GEMMs (TransformerEngine transformer_engine/pytorch/module/linear.py, _linear
// forward and backward, and module/base.py initialize_ub, read at d0067d0, 2026-08):
// - A linear's input is quantized before its GEMM. Hopper's FP8 GEMMs take only the TN layout,
//   so the weight gradient needs the input transposed ("column-wise" data): one cast_transpose
//   kernel reads the bf16 input (2 B per value) and writes both FP8 layouts (1 + 1 B), and only
//   the column-wise copy is kept for the backward. The QKV and FC1 inputs come out of the norm
//   already in FP8 (Megatron-Core's TELayerNormColumnParallelLinear): their cost is the transpose
//   (read 1 B, write 1 B per gathered value; with sequence parallelism the backward gathers the
//   FP8 rows again and transposes them, FP8 column-wise data cannot be all-gathered) less the
//   byte the norm no longer writes.
// - The output gradient is quantized the same way before the dgrad and wgrad GEMMs (4 B per
//   value); with sequence parallelism the row-parallel linears' gradient is quantized row-wise on
//   the rank's shard (read 2, write 1), gathered in FP8, then transposed (read 1, write 1).
// - All-gathers that feed an FP8 GEMM carry FP8: the input all-gathers before QKV and FC1 and
//   the backward's re-gathers and output-gradient gathers (linear.py quantizes before
//   gather_along_first_dim; userbuffers: fp8_buf for every all-gather overlap).
// - Weights are cast once per iteration (is_first_microbatch): read bf16, write both FP8 layouts
//   (4 B per parameter), and the cast copy stays in memory (plan/rank_memory.cpp); FP8 primary
//   weights (fp8_params) skip both.
// - Delayed scaling reduces the amaxes of every FP8 tensor of a model chunk once per forward
//   (on leaving fp8_autocast) and once per backward (FP8GlobalStateManager.
//   reduce_and_update_fp8_tensors) over the stage's ranks (Megatron-Core's amax reduction group):
//   two small all-reduces per chunk and micro-batch, latency-bound at scale.
// Megatron-Core's own activation functions (bias-GELU, SwiGLU) run outside Transformer Engine,
// so FC2's input and FC1's output gradient are cast by their own kernels.
// On Blackwell FP8 GEMMs take every layout (TE's nvte_is_non_tn_fp8_gemm_supported, compute
// capability 10.x and up but 12.x): no transposed copy is made and the gathered rows serve the
// weight gradient as they are. The lowering marks those bytes (Op::tn_layout_bytes,
// IterationWork::weight_cast_tn_bytes_per_param) and the cost model leaves them out there.
//
// Per-tensor current scaling (Fp8Recipe::kTensorwise: Float8CurrentScalingQuantizer, TE
// pytorch/tensor/float8_tensor.py and csrc/extensions/cast.cpp, normalization.cpp) takes each
// tensor's scale from its own amax just before the cast, so every cast is two passes: an amax
// kernel reads the bf16 tensor (2 B per value), then the cast reads it again and writes its FP8
// layouts (as delayed scaling's one kernel does). The norm cannot write FP8 directly (the scale is
// not known until the norm's output is): it writes bf16 and computes the amax on the way
// (quantize_with_amax), then a cast reads it (2 B) and writes the row-wise FP8 copy (1 B); the
// column-wise copy is the transpose, as with delayed scaling. A column-parallel input that is
// gathered with sequence parallelism (QKV, FC1) and a row-parallel output gradient gathered in the
// backward take one amax all-reduce over the TP group each (set_quantizer_amax_reduction_group).
// Weights: amax, then the cast (6 B per parameter, once per iteration). No per-chunk amax
// reduction: there is no amax history.
//
// MXFP8 (Precision::kMxfp8: MXFP8BlockScaling, Megatron's --fp8-recipe mxfp8; TE d0067d0
// module/linear.py, csrc/extensions/normalization.cpp, common/cast/mxfp8): one kernel reads the
// bf16 tensor and writes both layouts, each 1 B per value and an E8M0 scale per 32 (2 + 2.06 B);
// no amax anywhere. The norm writes bf16 and is quantized apart (the fused path is cuDNN's, opt-in).
// With SP the rank's rows are quantized, the row-wise copy gathered (1.03 B per value), and the
// backward gathers the column-wise copy (1.03 B); a row-parallel output gradient is gathered in
// both layouts (2.06 B). Weights: both layouts once per iteration; MXFP8 primary weights are
// gathered in bf16 through the gradient buffer and quantized again after the gather.
// NVFP4 (Precision::kNvfp4: NVFP4BlockScaling, Megatron's --fp4-format e2m1; recipe defaults:
// 16 x 16 blocks for weights, a random Hadamard transform on the column-wise (weight-gradient)
// copies of inputs and gradients, stochastic rounding on gradients): an amax pass
// (nvte_hadamard_transform_amax: both amaxes in one read), then one kernel casts both layouts
// (0.5 B and an E4M3 scale per 16 values each) with the Hadamard transform fused; priced at the
// measured 1.475x MXFP8's time per value (below). Under SP one amax all-reduce over TP per
// gathered tensor, as current scaling; gathers carry 0.5625 B per value and the backward's
// column-wise data is laid out again after its gather (swap_first_dims: read and write 0.5625 B).
#include <initializer_list>
#include <string>

#include "plan/lowering_ops.hpp"
#include "plan/torchao_rowwise.hpp"

namespace trainsim::lowering {

namespace {

enum class LinearKind { kNormFused, kColumn, kRow, kOther };

LinearKind linear_kind(const std::string& name, bool moe) {
  if (name == "qkv" || (name == "fc1" && !moe)) return LinearKind::kNormFused;
  if (name == "fc1" || name == "shared_fc1") return LinearKind::kColumn;
  if (name == "proj" || name == "fc2" || name == "shared_fc2") return LinearKind::kRow;
  // MLA's down and up projections (plan/mla_lowering.cpp), each a linear with its own input cast.
  if (name.starts_with("qkv_")) return LinearKind::kColumn;
  return LinearKind::kOther;  // the MoE router stays in higher precision
}

// The speedup of a GEMM that fuses linears torchao converts one by one (torchtitan's Llama has
// separate wq, wk, wv and w1, w3 nn.Linear modules): the FLOP-weighted harmonic mean of theirs.
double fused_speedup(const Op& op, std::initializer_list<int64_t> widths) {
  double flops = 0, fp8_time = 0;
  for (const int64_t n : widths) {
    flops += static_cast<double>(n);
    fp8_time += static_cast<double>(n) / torchao_rowwise_speedup(op.m, op.k, n);
  }
  return flops / fp8_time;
}

// torchao's row-wise recipe: each linear's three GEMMs take the measured speedup of the whole
// float8 linear at its forward shape (its casts are inside that figure); all-gathers stay bf16
// (torchao gathers row-wise-scaled inputs and weights in bf16) and no amax crosses ranks (a row's
// scale is the rank's own).
void mark_rowwise_linears(LayerWork& w, const ModelSpec& m, const Shapes& s) {
  const bool moe = m.moe.has_value();
  for (Op& op : w.forward) {
    if (op.kind != OpKind::kGemm || linear_kind(op.name, moe) == LinearKind::kOther) continue;
    const std::string name = op.name;
    if (name == "qkv") op.fp8_linear_speedup = fused_speedup(op, {s.q / s.t, s.kv / s.t, s.kv / s.t});
    else if (m.ffn_kind == FfnKind::kSwiglu && (name == "fc1" || name == "shared_fc1")) op.fp8_linear_speedup = fused_speedup(op, {op.n / 2, op.n / 2});
    else op.fp8_linear_speedup = torchao_rowwise_speedup(op.m, op.k, op.n);
    for (const char* grad : {"_dgrad", "_wgrad"}) {
      const int32_t i = index_of(w.backward, std::string(op.name) + grad, 0);
      if (i >= 0) w.backward[static_cast<size_t>(i)].fp8_linear_speedup = op.fp8_linear_speedup;
    }
  }
}

// FP8 blockwise: each linear's three GEMMs at the GPU's block-scaled FP8 rate.
void mark_block_scaled_linears(LayerWork& w, bool moe) {
  for (Op& op : w.forward) {
    if (op.kind != OpKind::kGemm || linear_kind(op.name, moe) == LinearKind::kOther) continue;
    op.fp8_block_scaled = true;
    for (const char* grad : {"_dgrad", "_wgrad"}) {
      const int32_t i = index_of(w.backward, std::string(op.name) + grad, 0);
      if (i >= 0) w.backward[static_cast<size_t>(i)].fp8_block_scaled = true;
    }
  }
}

// Bytes per value of a 16-bit tensor's quantization for the GEMMs, by recipe (the header above).
struct Quantization {
  double cast = 0;          // read the bf16 tensor, write the layouts the GEMMs need (amax pass included)
  double cast_tn = 0;       // of which the transposed copy of TN-only FP8 GEMMs (Op::tn_layout_bytes)
  double shard_cast = 0;    // a row-parallel output gradient gathered with SP, quantized on the rank's rows first
  bool norm_writes_fp8 = false;  // delayed scaling: the norm writes the FP8 rows itself
  double norm_cast = 0;          // else: the norm writes bf16 and this cast quantizes it (the rank's rows)
  bool gathered_transpose = false;  // per-tensor FP8: the gathered rows transposed (TN only: 2 B per value)
  double gather_forward = 0;     // bytes per value of the forward input all-gathers
  double gather_wgrad = 0;       // of the backward's re-gather of the input (the weight gradient's)
  double gather_grad = 0;        // of the row-parallel output gradient's gather
  double gathered_copy = 0;      // NVFP4: the column-wise data re-laid after a gather (swap_first_dims), per value
  bool tp_amax = false;          // one amax all-reduce over TP per gathered tensor
};

Quantization quantization(const ParallelPlan& p) {
  constexpr double kMx = 2.0 + 2.0 * (1.0 + 1.0 / 32.0);  // read bf16; both layouts, an E8M0 scale per 32
  constexpr double kNvfp4Layout = 0.5 + 1.0 / 16.0;        // E2M1 and an E4M3 scale per 16 values
  // NVFP4 moves 2 + 2 + 2 x 0.5625 = 5.1 B per value (the amax pass, then the cast of both
  // layouts), but its kernels also run the Hadamard transform and stochastic rounding: measured,
  // they take 1.475x MXFP8's time per value (TransformerEngine@8f2e635 gemm_profiling on a B300,
  // autocast less pre-quantized, the 12 GEMMs of a layer: NVFP4 2.688 ms, MXFP8 1.822 ms), priced
  // as 1.475x MXFP8's bytes.
  constexpr double kNv = kMx * (2.688 / 1.822);
  switch (p.precision) {
    case Precision::kMxfp8:
      return {kMx, 0.0, kMx, false, kMx, false, 1.0 + 1.0 / 32.0, 1.0 + 1.0 / 32.0, 2.0 * (1.0 + 1.0 / 32.0), 0.0, false};
    case Precision::kNvfp4:
      return {kNv, 0.0, kNv, false, kNv, false, kNvfp4Layout, kNvfp4Layout, 2.0 * kNvfp4Layout, 2.0 * kNvfp4Layout, true};
    default: break;
  }
  if (p.fp8_recipe == Fp8Recipe::kBlockwise) {
    // Float8BlockQuantizer: one kernel writes the row-wise copy and the transposed column-wise one,
    // 1 B per value and an fp32 scale per 128 each; no amax. Gathered: each layout as quantized,
    // and the column-wise data re-laid after its gather (swap_first_dims: read and write 1 B).
    constexpr double kLayout = 1.0 + 4.0 / 128.0, kBlock = 2.0 + 2.0 * kLayout;
    return {kBlock, 0.0, kBlock, false, kBlock, false, kLayout, kLayout, 2.0 * kLayout, 2.0, false};
  }
  // Per-tensor FP8: cast_transpose reads 2 B and writes both layouts (1 + 1 B); current scaling
  // reads the tensor once more for its amax. Gathered: the FP8 rows (1 B), transposed after.
  // Current scaling's norm computes the amax as it writes bf16; its cast reads 2 and writes 1 B.
  const double amax = p.fp8_recipe == Fp8Recipe::kTensorwise ? 2.0 : 0.0;
  const bool delayed = p.fp8_recipe == Fp8Recipe::kDelayed;
  return {4.0 + amax, 1.0, 3.0 + amax, delayed, 3.0, true, 1.0, 1.0, 1.0, 0.0, !delayed};
}

// The all-gathers that feed a quantized GEMM carry the quantized layout: the attention block's (the
// first of each name) and a dense FFN's (the second); after each, NVFP4's column-wise re-layout.
void gather_quantized(std::vector<Op>& ops, const char* name, bool dense_ffn, double value_bytes, double bytes_per_value,
                      double copy_per_value) {
  for (int32_t occurrence = 0; occurrence < (dense_ffn ? 2 : 1); ++occurrence) {
    const int32_t i = index_of(ops, name, occurrence);
    if (i < 0) continue;
    Op& gather = ops[static_cast<size_t>(i)];
    gather.bytes *= bytes_per_value / value_bytes;
    if (copy_per_value > 0) ops.push_back(memory("fp8_gathered_relayout", gather.bytes / bytes_per_value * copy_per_value));
  }
}

Op cast(const char* name, double values, double per_value, double tn_per_value) {
  Op op = memory(name, values * per_value);
  op.tn_layout_bytes = values * tn_per_value;
  return op;
}

}  // namespace

void add_fp8_conversions(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  if (!quantized_linears(p.precision)) return;
  const bool moe = m.moe.has_value(), sp = p.sequence_parallel && s.t > 1;
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kRowwise) return mark_rowwise_linears(w, m, s);
  if (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kBlockwise) mark_block_scaled_linears(w, moe);
  const Quantization q = quantization(p);
  const double shard = sp ? static_cast<double>(s.t) : 1.0;  // a gathered tensor over this rank's rows
  const auto amax_allreduce = [&](std::vector<Op>& ops, const char* name) {
    if (q.tp_amax && sp) ops.push_back(collective(name, CollectiveKind::kAllReduce, GroupKind::kTp, 4.0));
  };
  const std::vector<Op> gemms = w.forward;
  for (const Op& op : gemms) {
    if (op.kind != OpKind::kGemm) continue;
    const LinearKind kind = linear_kind(op.name, moe);
    if (kind == LinearKind::kOther) continue;
    const size_t forward_before = w.forward.size(), backward_before = w.backward.size();
    const double input = static_cast<double>(op.m) * static_cast<double>(op.k) * static_cast<double>(op.batch);
    const double grad = static_cast<double>(op.m) * static_cast<double>(op.n) * static_cast<double>(op.batch);
    switch (kind) {
      case LinearKind::kNormFused: {
        // The norm's output, gathered with SP. Per-tensor FP8: the gathered rows transposed (TN
        // only); delayed scaling's norm writes the FP8 rows itself (one byte less per value), the
        // other recipes' norm writes bf16 and a cast quantizes the rank's rows.
        if (q.gathered_transpose) (sp ? w.backward : w.forward).push_back(cast("fp8_transpose", input, 2.0, 2.0));
        if (q.norm_writes_fp8) {
          const int32_t norm = index_of(w.forward, op.name == std::string("qkv") ? "norm1" : "norm2", 0);
          if (norm >= 0) w.forward[static_cast<size_t>(norm)].bytes -= input / shard;
        } else {
          w.forward.push_back(cast("fp8_cast", input / shard, q.norm_cast, 0.0));
          amax_allreduce(w.forward, "fp8_amax_tp_allreduce");
        }
        w.backward.push_back(cast("fp8_cast_grad", grad, q.cast, q.cast_tn));
        break;
      }
      case LinearKind::kColumn:
        w.forward.push_back(cast("fp8_cast", input, q.cast, q.cast_tn));
        w.backward.push_back(cast("fp8_cast_grad", grad, q.cast, q.cast_tn));
        break;
      case LinearKind::kRow:
        w.forward.push_back(cast("fp8_cast", input, q.cast, q.cast_tn));
        if (!sp) {
          w.backward.push_back(cast("fp8_cast_grad", grad, q.cast, q.cast_tn));
        } else {
          // Quantized on the rank's rows, gathered quantized; per-tensor FP8 then transposes it.
          Op g = cast("fp8_cast_grad", grad / shard, q.gathered_transpose ? q.shard_cast : q.cast, 0.0);
          if (q.gathered_transpose) {
            g.bytes += 2.0 * grad;
            g.tn_layout_bytes = 2.0 * grad;
          }
          w.backward.push_back(g);
        }
        amax_allreduce(w.backward, "fp8_amax_tp_allreduce_bwd");
        break;
      case LinearKind::kOther: break;
    }
    // A linear's casts run where it does (a CUDA graph of its block captures them).
    tag_graph_scope(w.forward, forward_before, op.graph_scope);
    tag_graph_scope(w.backward, backward_before, op.graph_scope);
  }
  if (!sp) return;
  gather_quantized(w.forward, "sp_allgather", !moe, s.e, q.gather_forward, 0.0);
  gather_quantized(w.backward, "sp_allgather", !moe, s.e, q.gather_grad, q.gathered_copy);
  gather_quantized(w.backward, "sp_allgather_wgrad", !moe, s.e, q.gather_wgrad, q.gathered_copy);
}

void add_fp8_amax_reductions(IterationWork& work, const ModelSpec& m, const ParallelPlan& p) {
  // Row-wise scales need no reduction, and the weights' casts are inside the measured speedup.
  if (!quantized_linears(p.precision) || (p.precision == Precision::kFp8 && p.fp8_recipe == Fp8Recipe::kRowwise)) return;
  const Quantization q = quantization(p);
  // The weights are cast once per iteration (Megatron's is_first_microbatch) as any tensor of the
  // recipe is (NVFP4's 16 x 16 blocks: the same bytes). FP8 primary weights skip it, but MXFP8's
  // (Megatron-Bridge's reuse_grad_buf_for_mxfp8_param_ag) are gathered in bf16 through the gradient
  // buffer and quantized again after every gather.
  const bool cast_weights = !p.fp8_params || p.precision == Precision::kMxfp8;
  work.weight_cast_bytes_per_param = cast_weights ? q.cast : 0.0;
  work.weight_cast_tn_bytes_per_param = cast_weights ? q.cast_tn : 0.0;
  if (p.precision != Precision::kFp8 || p.fp8_recipe != Fp8Recipe::kDelayed) return;  // no amax history
  // One fp32 amax per FP8 tensor: a linear's input, weight and output gradient.
  constexpr double kAmaxesPerLinear = 3.0;
  // QKV and the projection (MLA: its down and up projections and the projection); FC1 and FC2 of
  // the dense FFN, or of each local and shared expert.
  const double ffns = m.moe ? static_cast<double>(m.moe->experts / p.ep + m.moe->shared_experts) : 1.0;
  const double attention_linears = !m.mla ? 2.0 : m.mla->q_lora_rank > 0 ? 5.0 : 4.0;
  const double linears = attention_linears + 2.0 * ffns;
  const int64_t chunks = p.pp * (p.schedule == Schedule::kInterleaved ? p.vpp : 1);
  const int64_t chunk_layers = (m.layers + chunks - 1) / chunks;  // the largest chunk's, evenly split
  const double bytes = kAmaxesPerLinear * linears * 4.0 * static_cast<double>(chunk_layers);
  work.chunk_forward.push_back(collective("fp8_amax_allreduce", CollectiveKind::kAllReduce, GroupKind::kStage, bytes));
  work.chunk_backward.push_back(collective("fp8_amax_allreduce_bwd", CollectiveKind::kAllReduce, GroupKind::kStage, bytes));
}

}  // namespace trainsim::lowering
