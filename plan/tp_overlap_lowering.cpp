// Which TP collectives of a transformer layer run beside which GEMM: Megatron-LM's backward
// overlaps (tp_overlap) and Transformer Engine's userbuffer overlaps of every TP collective
// (tp_comm_overlap). Pairs ops by index in a layer's lists (Op::overlaps_op and the overlap
// fields); the pricing of an overlap is sim/step_cost.cpp's overlapped_collective_s.
#include <cstring>
#include <string>

#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

int32_t index_of(const std::vector<Op>& ops, const std::string& name, int32_t occurrence) {
  for (size_t i = 0; i < ops.size(); ++i) {
    // strcmp: no strlen of every op's name first (searched once per plan in `search`'s screen).
    if (ops[i].name[0] == name[0] && std::strcmp(ops[i].name, name.c_str()) == 0 && occurrence-- == 0) return static_cast<int32_t>(i);
  }
  return -1;
}

// Megatron-LM (2022+) overlaps, in the backward of each column-parallel linear (QKV, FC1), the
// collective on the input gradient (all-reduce, or reduce-scatter with SP) with the weight-gradient
// GEMM, and with SP the all-gather of the input for that GEMM with the input-gradient GEMM.
void pair_backward_overlaps(std::vector<Op>& backward) {
  const char* const linears[] = {"qkv", "fc1"};
  for (int32_t i = 0; i < 2; ++i) {
    const std::string name = linears[i];
    const int32_t wgrad = index_of(backward, name + "_wgrad", 0);
    const int32_t dgrad = index_of(backward, name + "_dgrad", 0);
    const int32_t reduce = std::max(index_of(backward, "tp_allreduce", i), index_of(backward, "sp_reducescatter", i));
    const int32_t gather = index_of(backward, "sp_allgather_wgrad", i);
    if (reduce >= 0 && wgrad >= 0) backward[static_cast<size_t>(reduce)].overlaps_op = wgrad;
    if (gather >= 0 && dgrad >= 0) backward[static_cast<size_t>(gather)].overlaps_op = dgrad;
  }
}

// Transformer Engine's userbuffer overlaps, as Megatron-Core's --tp-comm-overlap sets them up
// (TransformerEngine transformer_engine/pytorch/module/base.py, initialize_ub defaults):
// ring_exchange for the all-gathers before QKV and FC1 and of the output gradient before PROJ's and
// FC2's dgrad (copy engines move the chunks; the first of t chunks is local, so (t - 1) / t of the
// GEMM can hide the rest); pipeline for the reduce-scatters after PROJ and FC2 (4 splits on 16
// SMs: the last split's reduce-scatter shows); bulk for the backward's input all-gather (beside
// the dgrad GEMM) and dgrad reduce-scatter (beside the wgrad GEMM), on 16 SMs. An MoE layer's
// experts are grouped GEMMs without userbuffers: only its attention block overlaps. torchtitan's
// async TP (symmetric-memory micro-pipelining) is priced the same way. Not modeled: all-gathers
// in FP8 (Transformer Engine's fp8_buf; torchao's Float8 TP casts before gathering, with or
// without async TP), which would halve those bytes under FP8.
constexpr int32_t kUserbufferSms = 16;   // add_ub's num_sm default for pipeline and bulk
constexpr double kPipelineSplits = 4.0;  // num_splits default for pipeline
void pair_tp_comm_overlaps(LayerWork& w, const ParallelPlan& p, bool dense_ffn) {
  const double t = static_cast<double>(p.tp);
  const auto pair = [](std::vector<Op>& ops, const char* collective, int32_t occurrence, const char* gemm,
                       double hideable, double exposed, int32_t sms) {
    const int32_t c = index_of(ops, collective, occurrence), g = index_of(ops, gemm, 0);
    if (c < 0 || g < 0) return;
    Op& op = ops[static_cast<size_t>(c)];
    op.overlaps_op = g;
    op.overlap_hideable_fraction = hideable;
    op.overlap_exposed_fraction = exposed;
    op.overlap_comm_sms = sms;
  };
  const double ring = (t - 1.0) / t, split = 1.0 / kPipelineSplits;
  const char* const in[] = {"qkv", "fc1"};
  const char* const out[] = {"proj", "fc2"};
  const char* const in_dgrad[] = {"qkv_dgrad", "fc1_dgrad"};
  const char* const in_wgrad[] = {"qkv_wgrad", "fc1_wgrad"};
  const char* const out_dgrad[] = {"proj_dgrad", "fc2_dgrad"};
  for (int32_t i = 0; i < (dense_ffn ? 2 : 1); ++i) {
    pair(w.forward, "sp_allgather", i, in[i], ring, 0.0, 0);
    pair(w.forward, "sp_reducescatter", i, out[i], 1.0 - split, split, kUserbufferSms);
    pair(w.backward, "sp_allgather", i, out_dgrad[i], ring, 0.0, 0);
    pair(w.backward, "sp_allgather_wgrad", i, in_dgrad[i], 1.0, 0.0, kUserbufferSms);
    pair(w.backward, "sp_reducescatter", i, in_wgrad[i], 1.0, 0.0, kUserbufferSms);
  }
}

}  // namespace trainsim::lowering
