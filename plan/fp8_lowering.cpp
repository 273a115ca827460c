// FP8 training as Transformer Engine runs it under Megatron-Core (delayed scaling, Megatron-LM's
// --fp8-recipe and NeMo's fp8_recipe default; per-tensor current scaling below). Every linear's GEMMs take FP8 operands; what that
// adds beside the GEMMs (TransformerEngine transformer_engine/pytorch/module/linear.py, _linear
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

// The all-gathers that feed an FP8 GEMM carry one byte per value: the attention block's (the
// first of each name) and a dense FFN's (the second).
void gather_in_fp8(std::vector<Op>& ops, const char* name, bool dense_ffn, double value_bytes) {
  for (int32_t occurrence = 0; occurrence < (dense_ffn ? 2 : 1); ++occurrence) {
    const int32_t i = index_of(ops, name, occurrence);
    if (i >= 0) ops[static_cast<size_t>(i)].bytes /= value_bytes;
  }
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

}  // namespace

void add_fp8_conversions(LayerWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  if (p.precision != Precision::kFp8) return;
  const bool moe = m.moe.has_value(), sp = p.sequence_parallel && s.t > 1;
  if (p.fp8_recipe == Fp8Recipe::kRowwise) return mark_rowwise_linears(w, m, s);
  const double shard = sp ? static_cast<double>(s.t) : 1.0;  // a gathered tensor over this rank's rows
  // Current scaling's amax pass: one more read of the bf16 tensor (2 B per value) before each cast.
  const double amax = p.fp8_recipe == Fp8Recipe::kTensorwise ? 2.0 : 0.0;
  const auto amax_allreduce = [&](std::vector<Op>& ops, const char* name) {
    if (amax > 0 && sp) ops.push_back(collective(name, CollectiveKind::kAllReduce, GroupKind::kTp, 4.0));
  };
  const std::vector<Op> gemms = w.forward;
  for (const Op& op : gemms) {
    if (op.kind != OpKind::kGemm) continue;
    const LinearKind kind = linear_kind(op.name, moe);
    if (kind == LinearKind::kOther) continue;
    const double input = static_cast<double>(op.m) * static_cast<double>(op.k) * static_cast<double>(op.batch);
    const double grad = static_cast<double>(op.m) * static_cast<double>(op.n) * static_cast<double>(op.batch);
    switch (kind) {
      case LinearKind::kNormFused: {
        // The transpose of the gathered FP8 input. Delayed scaling: the norm before it writes FP8,
        // one byte less per value. Current scaling: the norm writes bf16 as without FP8, and a cast
        // reads it and writes the row-wise FP8 copy (3 B per value of the rank's rows).
        (sp ? w.backward : w.forward).push_back(memory("fp8_transpose", 2.0 * input));
        if (amax > 0) {
          w.forward.push_back(memory("fp8_cast", 3.0 * input / shard));
          amax_allreduce(w.forward, "fp8_amax_tp_allreduce");
        } else {
          const int32_t norm = index_of(w.forward, op.name == std::string("qkv") ? "norm1" : "norm2", 0);
          if (norm >= 0) w.forward[static_cast<size_t>(norm)].bytes -= input / shard;
        }
        w.backward.push_back(memory("fp8_cast_grad", (4.0 + amax) * grad));
        break;
      }
      case LinearKind::kColumn:
        w.forward.push_back(memory("fp8_cast", (4.0 + amax) * input));
        w.backward.push_back(memory("fp8_cast_grad", (4.0 + amax) * grad));
        break;
      case LinearKind::kRow:
        w.forward.push_back(memory("fp8_cast", (4.0 + amax) * input));
        w.backward.push_back(memory("fp8_cast_grad", sp ? (3.0 + amax) * grad / shard + 2.0 * grad : (4.0 + amax) * grad));
        amax_allreduce(w.backward, "fp8_amax_tp_allreduce_bwd");
        break;
      case LinearKind::kOther: break;
    }
  }
  if (!sp) return;
  gather_in_fp8(w.forward, "sp_allgather", !moe, s.e);
  gather_in_fp8(w.backward, "sp_allgather", !moe, s.e);
  gather_in_fp8(w.backward, "sp_allgather_wgrad", !moe, s.e);
}

void add_fp8_amax_reductions(IterationWork& work, const ModelSpec& m, const ParallelPlan& p) {
  // Row-wise scales need no reduction, and the weights' casts are inside the measured speedup.
  if (p.precision != Precision::kFp8 || p.fp8_recipe == Fp8Recipe::kRowwise) return;
  if (p.fp8_recipe == Fp8Recipe::kTensorwise) {
    // No amax history to reduce; each weight's cast takes its amax first (read 2 B more).
    work.weight_cast_bytes_per_param = p.fp8_params ? 0.0 : 6.0;
    return;
  }
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
  // Read bf16, write the FP8 row- and column-wise copies, once per iteration.
  work.weight_cast_bytes_per_param = p.fp8_params ? 0.0 : 4.0;
}

}  // namespace trainsim::lowering
