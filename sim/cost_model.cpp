// Datasheet cost model: roofline GEMMs with wave quantization, fused attention at a fraction of
// peak, bandwidth-bound kernels, and collectives by the formula of sim/collectives.cpp (NCCL's
// protocol model inside an NVLink node, alpha-beta otherwise). docs/cost-model.md derives each formula.
#include "sim/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "sim/collectives.hpp"
#include "sim/reference_efficiency.hpp"

namespace trainsim {

double CostModel::optimizer_s(double params) const { return memory_bound_s(params * kAdamBytesPerParam); }

double CostModel::allocator_reserve_fraction() const { return default_efficiency_constants().allocator_reserve_fraction; }

double expected_remote_nodes(int64_t experts, int64_t top_k, int64_t nodes) {
  if (nodes <= 1 || experts <= 0 || top_k <= 0) return 0.0;
  // A node holds experts / nodes of them; the chance a token's top_k distinct experts all miss it
  // is C(E - E/N, k) / C(E, k) = prod_i (E - E/N - i) / (E - i).
  const double e = static_cast<double>(experts), off = e - e / static_cast<double>(nodes);
  double miss = 1.0;
  for (int64_t i = 0; i < top_k && miss > 0; ++i) miss *= std::max(0.0, off - static_cast<double>(i)) / (e - static_cast<double>(i));
  return static_cast<double>(nodes - 1) * (1.0 - miss);
}

double CostModel::node_dedup_exchange_s(const Op& op, const GroupScope& scope) const {
  if (scope.size <= 1 || op.bytes <= 0) return 0.0;
  const GroupScope node{scope.ranks_per_node, scope.ranks_per_node, 1};  // the NVLink forward inside a node
  const double intra = collective_s(CollectiveKind::kAllToAll, op.bytes, node);
  if (scope.intra_node()) return intra;
  // Across nodes each rank sends a token once to every other node holding one of its experts, to
  // the GPU of its own index there (a rail): an all-to-all over one rank per node whose bytes put
  // that much on the network ((n - 1) / n of an all-to-all's buffer leaves the rank). DeepEP and
  // HybridEP pipeline the two hops: the longer one shows.
  const double nodes = static_cast<double>(scope.nodes);
  const double network = op.bytes / static_cast<double>(op.dedup_top_k) * expected_remote_nodes(op.dedup_experts, op.dedup_top_k, scope.nodes);
  const GroupScope rail{scope.nodes, 1, scope.nodes};
  return std::max(intra, device_initiated_alltoall_s(network * nodes / (nodes - 1.0), rail));
}

double CostModel::op_s(const Op& op, const GroupScope& scope) const {
  switch (op.kind) {
    case OpKind::kGemm:
      if (op.fp8_linear_speedup > 0) return gemm_16bit_s(op.m, op.n, op.k, op.batch) / op.fp8_linear_speedup;
      return gemm_s(op.m, op.n, op.k, op.batch) * (op.fp8_block_scaled ? fp8_blockwise_gemm_slowdown() : 1.0);
    case OpKind::kAttention: return attention_s(op);
    case OpKind::kMemoryBound: {
      if (op.tn_layout_bytes <= 0 || !fp8_gemm_any_layout()) return memory_bound_op_s(op);
      if (op.bytes - op.tn_layout_bytes <= 0) return 0.0;  // only the transpose: not run
      Op any_layout = op;
      any_layout.bytes -= op.tn_layout_bytes;
      return memory_bound_op_s(any_layout);
    }
    case OpKind::kCollective: return op.dedup_top_k > 0 ? node_dedup_exchange_s(op, scope) : collective_s(op.collective, op.bytes, scope);
  }
  return 0.0;
}

DatasheetCostModel::DatasheetCostModel(const Hardware& hardware, Precision precision, EfficiencyConstants constants,
                                       bool flash2_attention)
    : hardware_(hardware), peak_flops_per_s_(hardware.gpu.peak_flops_per_s(precision)),
      // A GEMM operand's bytes: NVFP4 half a byte and an E4M3 scale per 16 values.
      bytes_per_value_(precision == Precision::kFp32 ? 4.0 : fp8_family(precision) ? 1.0 : precision == Precision::kNvfp4 ? 0.5625 : 2.0),
      c_(std::move(constants)) {
  TRAINSIM_ASSERT(peak_flops_per_s_ > 0, "the GPU has no peak for this precision (checked by the caller)");
  links_.nvlink = hardware.gpu.nvlink_bandwidth_bytes_per_s > 0;
  links_.nvlink_bus_bytes_per_s = hardware.gpu.nvlink_bandwidth_bytes_per_s * c_.nvlink_bandwidth_fraction;
  links_.nic_bytes_per_s = gbit_per_s_to_bytes_per_s(hardware.inter_node_gbps_per_gpu) * c_.network_bandwidth_fraction;
  links_.alltoall_nic_bytes_per_s = gbit_per_s_to_bytes_per_s(hardware.inter_node_gbps_per_gpu) * c_.alltoall_network_fraction;
  links_.nccl_ll_max_bus_bytes_per_s = hardware.gpu.capabilities.nccl_ll_max_bus_bytes_per_s;
  links_.step_intra_s = c_.collective_step_intra_s;
  links_.step_inter_s = c_.collective_step_inter_s;
  links_.kernel_overhead_s = c_.kernel_overhead_s;
  if (hardware.gpu.capabilities.scale_up_fabric == ScaleUpFabric::kFullMesh) {
    links_.mesh_links = hardware.gpu.capabilities.nvlink_domain_gpus - 1;  // no switch: no NVLink SHARP
  } else {
    set_nvls_links(links_, hardware.gpu.capabilities.nvlink_generation, hardware.gpu.nvlink_bandwidth_bytes_per_s);
  }
  const ReferenceEfficiency reference = reference_efficiency(hardware.gpu, precision, flash2_attention);
  gemm_flops_per_s_ = peak_flops_per_s_ * c_.gemm_peak_fraction * reference.gemm_ratio;
  const bool quantized = quantized_linears(precision);
  gemm_16bit_flops_per_s_ = quantized ? hardware.gpu.peak_flops_per_s(Precision::kBf16) * c_.gemm_peak_fraction *
                                      reference_efficiency(hardware.gpu, Precision::kBf16, flash2_attention).gemm_ratio
                                : gemm_flops_per_s_;
  // FP8, MXFP8 and NVFP4 training run only the linear layers' GEMMs quantized; attention stays in
  // BF16 (Transformer Engine's FP8 attention is opt-in; shared/validation/README.md).
  const Precision attention_precision = quantized ? Precision::kBf16 : precision;
  attention_flops_per_s_ = hardware.gpu.peak_flops_per_s(attention_precision) * c_.attention_peak_fraction * reference.attention_ratio;
  attention_curve_ = reference.attention_curve;
  attention_forward_ = reference.attention_forward;
  attention_backward_ = reference.attention_backward;
  reference_ = reference.source;
}

double DatasheetCostModel::fp8_blockwise_gemm_slowdown() const {
  // Transformer Engine's own GEMMs, per layer of hidden 4096, FFN 16384, 15,872 tokens
  // (TransformerEngine@8f2e635 docs/examples/gemm_profiling). Hopper (H200 NVL, autocast): FP8
  // blockwise 22.882 ms with its quantization; per-tensor current scaling 20.285, of which 3.500 ms
  // quantization (pre-quantized: 16.785). Blockwise quantization moves 4.06 B per value against
  // current scaling's 6 (plan/fp8_lowering.cpp), so 2.370 ms: its GEMMs take 20.512 ms, 1.222x the
  // per-tensor ones. Blackwell runs blockwise as MXFP8 (the same page: "emulated via MXFP8"): the
  // MXFP8 kernels' 7.161 against 6.812 ms (B300, pre-quantized).
  switch (hardware_.gpu.capabilities.generation) {
    case GpuGeneration::kHopper: return (22.882 - 3.500 * (2.0 + 2.0 * (1.0 + 4.0 / 128.0)) / 6.0) / 16.785;
    case GpuGeneration::kBlackwell: return 7.161 / 6.812;
    default: return 1.0;
  }
}

double DatasheetCostModel::gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  return gemm_at(m, n, k, batch, gemm_flops_per_s_, bytes_per_value_);
}

double DatasheetCostModel::gemm_16bit_s(int64_t m, int64_t n, int64_t k, int64_t batch) const {
  return gemm_at(m, n, k, batch, gemm_16bit_flops_per_s_, std::max(bytes_per_value_, 2.0));
}

double DatasheetCostModel::gemm_at(int64_t m, int64_t n, int64_t k, int64_t batch, double flops_per_s, double bytes_per_value) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  // Wave quantization: output tiles run in waves of one tile per SM; a partial last wave idles SMs;
  // each wave pays its fill and epilogue, the kernel its ramp and tail (EfficiencyConstants).
  const double tiles = std::ceil(static_cast<double>(m) / static_cast<double>(c_.gemm_tile_m)) *
                       std::ceil(static_cast<double>(n) / static_cast<double>(c_.gemm_tile_n)) * static_cast<double>(batch);
  const double sms = static_cast<double>(hardware_.gpu.sm_count);
  const double waves = std::ceil(tiles / sms);
  const double wave_efficiency = tiles / (waves * sms);
  // A tile narrower than 128 (a skinny GEMM: the router's few experts) writes as much less.
  const double tile_share = std::min(1.0, static_cast<double>(m) / static_cast<double>(c_.gemm_tile_m)) *
                            std::min(1.0, static_cast<double>(n) / static_cast<double>(c_.gemm_tile_n));
  const double compute_s = flops / (flops_per_s * wave_efficiency) + waves * c_.gemm_wave_s * tile_share;
  // Roofline: operands and result must stream through HBM at least once.
  const double bytes = (static_cast<double>(m) * static_cast<double>(k) + static_cast<double>(k) * static_cast<double>(n) +
                        static_cast<double>(m) * static_cast<double>(n)) * bytes_per_value * static_cast<double>(batch);
  const double memory_s = bytes / (hardware_.gpu.memory_bandwidth_bytes_per_s * c_.memory_bandwidth_fraction);
  return std::max(compute_s, memory_s) + c_.gemm_kernel_s + c_.kernel_overhead_s;
}

double DatasheetCostModel::attention_s(const Op& op) const {
  // The kernel's shape: its head size and the sequence one call sees (a CP rank's share).
  // A sliding window's kernel visits about window keys per query: it runs at the rate of a
  // sequence that long (clamped to the measured curves, 512 tokens and up).
  double seq = static_cast<double>(op.attention_seq) / static_cast<double>(std::max<int64_t>(1, op.attention_cp));
  if (op.attention_window > 0) seq = std::min(seq, static_cast<double>(op.attention_window));
  // Forward and backward kernels at their own rates; the curve (fwd+bwd) moves both alike.
  const double pass = op.backward ? attention_backward_ : attention_forward_;
  return op.flops() / (attention_flops_per_s_ * pass * attention_shape_factor(attention_curve_, op.attention_head_dim, seq)) +
         c_.kernel_overhead_s;
}

double DatasheetCostModel::memory_bound_s(double bytes) const {
  return bytes / (hardware_.gpu.memory_bandwidth_bytes_per_s * c_.memory_bandwidth_fraction) + c_.kernel_overhead_s;
}

double DatasheetCostModel::bus_bandwidth_bytes_per_s(const GroupScope& scope) const {
  return collective_bus_bytes_per_s(scope, links_);
}

double DatasheetCostModel::collective_s(CollectiveKind kind, double bytes, const GroupScope& scope) const {
  return datasheet_collective_s(kind, bytes, scope, links_);
}

double DatasheetCostModel::device_initiated_alltoall_s(double bytes, const GroupScope& scope) const {
  CollectiveLinks rdma = links_;
  rdma.alltoall_nic_bytes_per_s = 0;  // the NIC at network_bandwidth_fraction, as DeepEP measures it
  return datasheet_collective_s(CollectiveKind::kAllToAll, bytes, scope, rdma);
}

std::string DatasheetCostModel::describe() const {
  return "datasheet (" + hardware_.gpu.name + ", constants: " + c_.provenance + (reference_.empty() ? "" : "; " + reference_) + ")";
}

}  // namespace trainsim
