// Prices the ops of plan/lowering: seconds for a GEMM, an attention kernel, a memory-bound kernel
// or a collective on a group of known scope. One interface, so a measured hardware profile can
// replace the datasheet formulas op by op (issue 5). The datasheet model's constants are in
// EfficiencyConstants: documented in docs/cost-model.md, fitted once on published runs.
#pragma once

#include <cstdint>
#include <string>

#include "plan/lowering.hpp"
#include "plan/rank_grid.hpp"
#include "sim/attention_shape.hpp"
#include "sim/collectives.hpp"
#include "sim/hardware_catalog.hpp"

namespace trainsim {

// Adam step bytes per local parameter: read fp32 master, m, v and gradient (16), write master, m,
// v (12), write the 16-bit weight (2), read the gradient again for the norm / clipping (4).
inline constexpr double kAdamBytesPerParam = 34.0;

struct EfficiencyConstants {
  double gemm_peak_fraction = 0.80;         // large-GEMM throughput / dense peak
  double attention_peak_fraction = 0.50;    // fused attention throughput / dense peak
  double memory_bandwidth_fraction = 0.85;  // streaming kernels / HBM datasheet bandwidth
  // Communication efficiencies come from nccl-tests measurements, not from the fit:
  // 8 x A100 NVLink3 all-reduce busbw peaks at ~232 GB/s of 300 GB/s per direction, and a
  // 200 Gb/s HDR NIC delivers ~24 GB/s of 25 (BUILD-NOTES.md, public nccl-tests results).
  double nvlink_bandwidth_fraction = 232.0 / 300.0;
  double network_bandwidth_fraction = 24.0 / 25.0;
  // NCCL's all-to-all across nodes (peer-to-peer sends, one per peer) reaches less of the NIC than
  // its rings: NVIDIA's nccl-tests AlltoAll on 32 GPUs (4 nodes) gives busbw 48 GB/s on DGX H100
  // (8 x 400 Gb/s) and 24 GB/s on DGX A100 (8 x 200 Gb/s) (GTC25 S72583, shared/reference
  // microbench.json). busbw = S (n-1)/n / t, and each rank's (n-r)/n leaves its node through its own
  // NIC, so the NIC carries 48 x 24/31 = 37.2 GB/s of 50 (A100: 18.6 of 25): 0.743 of its line
  // rate, both GPUs alike. DeepEP / HybridEP's device-initiated RDMA keeps network_bandwidth_fraction
  // (DeepEP's README: 43-58 GB/s bottleneck bandwidth over 50 GB/s CX7 NICs).
  double alltoall_network_fraction = 48.0 * 24.0 / 31.0 / 50.0;
  double kernel_overhead_s = 4e-6;          // launch and tail gap per kernel
  // Host time to issue one op (framework dispatch + launch); the device idles when the host is
  // behind. Eager PyTorch per-op call: 8.6 us (pytorch #114860, shared/reference §5a).
  double host_dispatch_s = 8.6e-6;
  // Alpha per step inside a node: send/recv and all-to-all, and rings on GPUs without NVLink
  // (NVLink rings take NCCL's protocol latencies, sim/collectives.hpp).
  double collective_step_intra_s = 2e-6;
  double collective_step_inter_s = 8e-6;    // alpha per step across nodes
  // PyTorch's caching allocator: memory it holds beyond the allocated peak (reserved minus
  // allocated), as a fraction of the memory a step allocates and frees (activations, gathered
  // weights, accumulating gradients; sim/device_memory.hpp). Prior 0: no public systematic
  // measurement (shared/reference/microbench.md §5b); the shipped value is a fit.
  double allocator_reserve_fraction = 0.0;
  int64_t gemm_tile_m = 128, gemm_tile_n = 128;  // output tile per thread block
  // A GEMM kernel's fixed costs beside its FLOPs: each wave of output tiles pays its pipeline fill
  // and epilogue (gemm_wave_s), each kernel its ramp and tail (gemm_kernel_s). Fitted by
  // bench/gemm_shape_fit.py on the measured H100 BF16 GEMM table of shared/reference/microbench.json
  // (XLA's sm_90 table, 45 shapes with m, n >= 1024 and k 256-4096): 1.2 us and 4.5 us take its
  // rms log error from 55% to 8.3%; the B200 table gives 1.0 and 4.5 us. They are why a GEMM with
  // a short k (an MoE expert's 768-wide down projection) runs well below the large-GEMM rate.
  double gemm_wave_s = 1.2e-6;
  double gemm_kernel_s = 4.5e-6;
  std::string provenance;                   // how these values were obtained
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual double gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const = 0;
  // The same GEMM in 16-bit (bf16) operands, for a precision-fp8 plan's GEMMs priced against
  // bf16 (Op::fp8_linear_speedup); a model without a 16-bit price of its own uses gemm_s.
  virtual double gemm_16bit_s(int64_t m, int64_t n, int64_t k, int64_t batch) const { return gemm_s(m, n, k, batch); }
  virtual double attention_s(const Op& op) const = 0;
  virtual double memory_bound_s(double bytes) const = 0;
  // A memory-bound op by kind (its name): a profile may have measured that kernel itself.
  virtual double memory_bound_op_s(const Op& op) const { return memory_bound_s(op.bytes); }
  // The optimizer step over `params` parameters (a profile may have timed the update itself).
  virtual double optimizer_s(double params) const;
  // Host seconds to issue one op; 0 where the device never waits for the host (a measured
  // profile's op times already include their issue cost).
  virtual double host_dispatch_s() const { return 0.0; }
  // The caching allocator's reserve (EfficiencyConstants::allocator_reserve_fraction): the
  // allocator's, whatever prices the ops, so the shipped value unless a model was given another.
  virtual double allocator_reserve_fraction() const;
  // `bytes`: the whole buffer S of the nccl-tests convention (all-gather: the gathered output).
  virtual double collective_s(CollectiveKind kind, double bytes, const GroupScope& scope) const = 0;
  // An all-to-all the GPU drives itself over RDMA (DeepEP / HybridEP, the flex dispatcher's hop
  // across nodes) rather than through NCCL: by default as NCCL's.
  virtual double device_initiated_alltoall_s(double bytes, const GroupScope& scope) const {
    return collective_s(CollectiveKind::kAllToAll, bytes, scope);
  }
  virtual std::string describe() const = 0;
  // Streaming multiprocessors of the GPU priced (an overlap's communication kernel takes some).
  virtual int64_t sm_count() const = 0;
  // FP8 GEMMs take every operand layout, so no transposed FP8 copy is made (Transformer Engine's
  // nvte_is_non_tn_fp8_gemm_supported: compute capability 10.0 and up but 12.x); false: TN only.
  virtual bool fp8_gemm_any_layout() const { return false; }
  // How much longer a block-scaled FP8 GEMM (Op::fp8_block_scaled) takes than a per-tensor one.
  virtual double fp8_blockwise_gemm_slowdown() const { return 1.0; }
  // Dispatches on the op's kind; collectives need the scope of the op's group; a memory-bound op's
  // Op::tn_layout_bytes are left out where fp8_gemm_any_layout().
  double op_s(const Op& op, const GroupScope& scope) const;
  // The flex dispatcher's exchange (Op::dedup_top_k > 0) over the EP group `scope`: the copies
  // forwarded inside each node, and each token sent once to every other node holding one of its
  // experts (DeepEP / HybridEP); the longer of the two, the second by device_initiated_alltoall_s.
  double node_dedup_exchange_s(const Op& op, const GroupScope& scope) const;
};

// Other nodes of an EP group spread over `nodes` that hold at least one of a token's `top_k`
// distinct experts (of `experts`, experts / nodes per node), in expectation under balanced routing.
double expected_remote_nodes(int64_t experts, int64_t top_k, int64_t nodes);

class DatasheetCostModel final : public CostModel {
 public:
  // `flash2_attention`: attention runs FlashAttention-2 rather than cuDNN's (reference_efficiency).
  DatasheetCostModel(const Hardware& hardware, Precision precision, EfficiencyConstants constants, bool flash2_attention = false);
  double gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const override;
  double gemm_16bit_s(int64_t m, int64_t n, int64_t k, int64_t batch) const override;
  double attention_s(const Op& op) const override;
  double memory_bound_s(double bytes) const override;
  double collective_s(CollectiveKind kind, double bytes, const GroupScope& scope) const override;
  double device_initiated_alltoall_s(double bytes, const GroupScope& scope) const override;
  double host_dispatch_s() const override { return c_.host_dispatch_s; }
  double allocator_reserve_fraction() const override { return c_.allocator_reserve_fraction; }
  std::string describe() const override;
  int64_t sm_count() const override { return hardware_.gpu.sm_count; }
  bool fp8_gemm_any_layout() const override { return hardware_.gpu.capabilities.generation == GpuGeneration::kBlackwell; }
  double fp8_blockwise_gemm_slowdown() const override;
  // Bus bandwidth of a group (nccl-tests convention), bytes/s.
  double bus_bandwidth_bytes_per_s(const GroupScope& scope) const;

 private:
  Hardware hardware_;
  double peak_flops_per_s_;
  double gemm_flops_per_s_;       // peak x gemm_peak_fraction x the GPU's reference GEMM ratio
  double gemm_16bit_flops_per_s_;  // the same at the bf16 peak and reference ratio
  double attention_flops_per_s_;  // 16-bit peak x attention_peak_fraction x reference attention ratio
  // Each pass's rate over the pair's (ReferenceEfficiency::attention_forward, attention_backward).
  double attention_forward_ = 1.0, attention_backward_ = 1.0;
  AttentionCurve attention_curve_ = AttentionCurve::kNone;  // x attention_shape_factor at each op's shape
  std::string reference_;
  double bytes_per_value_;
  EfficiencyConstants c_;
  CollectiveLinks links_;  // the GPU's NVLink, NIC and NCCL LL cap with the constants' fractions
  double gemm_at(int64_t m, int64_t n, int64_t k, int64_t batch, double flops_per_s, double bytes_per_value) const;
};

// The constants shipped with trainsim (configs/efficiency.json), with their provenance.
const EfficiencyConstants& default_efficiency_constants();

// How far the datasheet model with the shipped constants is from the published runs of
// shared/validation, as `trainsim validate` last measured it (docs/validation.md): one line for a
// report's reader, so a forwarded answer carries its error band.
const char* datasheet_validated_error();

}  // namespace trainsim
