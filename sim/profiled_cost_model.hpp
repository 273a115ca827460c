// Prices ops from a measured hardware profile: GEMMs by trilinear interpolation of log time over
// the measured log M, N, K grid; attention over (batch*heads, sequence) per head dim; memory-bound
// kernels and collectives over log bytes. Outside the measured range it refuses (InputError
// naming the table and the range) unless extrapolation is allowed — then it scales from the
// nearest measured point at constant efficiency (collectives: the table's alpha-beta fit; a
// collective scope with no table: the datasheet formula) and records every such op, which the
// outputs list. Measured data are never replaced by zeros.
// A table of measured GEMM shapes (a profile from profiler traces) prices a shape it holds from its
// own median, and any other shape from the measured shape nearest in log (m, n, k) at that shape's
// FLOP rate, listed as extrapolated. A partial profile (from traces) has what it did not measure
// (memory-bound kernels, attention, collectives, the optimizer) priced by the datasheet +
// reference model, each category listed, instead of refused.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "common/hardware_profile.hpp"
#include "sim/cost_model.hpp"

namespace trainsim {

class ProfiledCostModel final : public CostModel {
 public:
  ProfiledCostModel(const HardwareProfile& profile, std::string source, const Hardware& hardware, Precision precision,
                    bool allow_extrapolation, const EfficiencyConstants& fallback);
  double gemm_s(int64_t m, int64_t n, int64_t k, int64_t batch) const override;
  double attention_s(const Op& op) const override;
  double memory_bound_s(double bytes) const override;
  // Norms, activations, softmax and cross-entropy from their own measured table when the profile
  // has one (kernel name: layernorm, gelu, softmax, cross_entropy; "_bwd" for the backward);
  // everything else, and kernels without a table, as a copy of the same bytes.
  double memory_bound_op_s(const Op& op) const override;
  double optimizer_s(double params) const override;
  double collective_s(CollectiveKind kind, double bytes, const GroupScope& scope) const override;
  std::string describe() const override;
  int64_t sm_count() const override { return fallback_.sm_count(); }
  // What was priced outside the measurements (empty when nothing was).
  std::set<std::string> extrapolated() const;

 private:
  [[noreturn]] void refuse(const std::string& what) const;
  double interpolate_table(const MemoryBoundTable& table, double bytes) const;
  void note(const std::string& what) const;
  double gemm_from_shapes(int64_t m, int64_t n, int64_t k, int64_t batch) const;
  // A partial profile lacks `what`: the datasheet prices it, listed; a full profile refuses.
  void not_measured(const std::string& category, const std::string& what) const;

  const HardwareProfile& profile_;
  std::string source_;
  const GemmTable* gemm_ = nullptr;
  const GemmShapeTable* gemm_shapes_ = nullptr;
  std::string dtype_;
  const MemoryBoundTable* copy_ = nullptr;
  const AttentionTable* attention_ = nullptr;
  bool allow_extrapolation_;
  DatasheetCostModel fallback_;
  mutable std::mutex mutex_;
  mutable std::set<std::string> extrapolated_;
};

// The dtype name a profile's GEMM table uses for a training precision.
std::string gemm_dtype_for(Precision precision, const HardwareProfile& profile);

// A CPU profile describes its own machine: the "GPU" is the host, with the measured best GEMM
// rate as its peak and its RAM as memory (no datasheet exists for it).
GpuSpec device_from_cpu_profile(const HardwareProfile& profile);

}  // namespace trainsim
