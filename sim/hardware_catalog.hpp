// Built-in GPUs, cluster presets and prices (configs/hardware.json, compiled in), each figure with
// its source, and the resolution of `--gpu / --cluster / --gpus-per-node / --inter-node-gbps /
// --price` into one Hardware description.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/parallel_plan.hpp"

namespace trainsim {

struct GpuSpec {
  std::string name;          // catalog key, e.g. "h100-sxm-80gb"
  std::string display_name;  // "NVIDIA H100 SXM5 80GB"
  // Dense (no sparsity) tensor-core peaks, FLOP/s; 0 where the GPU has no such unit (fp8 on A100).
  double peak_bf16_flops_per_s = 0;
  double peak_fp16_flops_per_s = 0;
  double peak_tf32_flops_per_s = 0;
  double peak_fp32_flops_per_s = 0;  // CUDA cores, no tensor cores
  double peak_fp8_flops_per_s = 0;
  double memory_bytes = 0;              // HBM capacity as the driver reports it
  double memory_bandwidth_bytes_per_s = 0;
  double nvlink_bandwidth_bytes_per_s = 0;  // per GPU, per direction
  int64_t sm_count = 0;
  double l2_bytes = 0;
  double power_w = 0;  // board TDP
  double usd_per_gpu_hour = 0;  // reference on-demand price
  std::string price_source;     // where and when that price was read
  std::string source;           // datasheet the figures come from

  // Peak of the tensor-core path used for `precision`: bf16 -> bf16, fp16 -> fp16, fp32 -> tf32
  // (fp32 training runs its GEMMs on TF32 tensor cores), fp8 -> fp8. There is no fallback: on a
  // GPU without fp8 (A100) this returns 0, and callers must refuse the plan rather than divide.
  double peak_flops_per_s(Precision precision) const;
};

struct ClusterSpec {
  std::string name;  // "dgx-a100"
  std::string gpu;   // a GpuSpec name
  int64_t gpus_per_node = 8;
  double inter_node_gbps_per_gpu = 0;  // NIC line rate per GPU, Gbit/s
  std::string source;
};

// What a prediction runs on: resolved, with defaults filled in.
struct Hardware {
  GpuSpec gpu;
  int64_t gpus = 1;
  int64_t gpus_per_node = 8;
  double inter_node_gbps_per_gpu = 200;
  double usd_per_gpu_hour = 0;
  std::string cluster;  // preset name, "custom", or "host" (the CPU a CPU profile measured)
  // The CPU host runs no CUDA context, caching allocator or NCCL: its memory is its tensors.
  bool is_host() const { return cluster == "host"; }
};

// The catalog, parsed and checked once on first use (a defect in it is an InternalError).
const std::vector<GpuSpec>& builtin_gpus();
const std::vector<ClusterSpec>& builtin_clusters();
std::vector<std::string> builtin_gpu_names();
std::vector<std::string> builtin_cluster_names();
// Throws InputError naming the unknown GPU, the nearest known one and the full list.
const GpuSpec& find_gpu(const std::string& name);
bool gpu_in_catalog(const std::string& name);
const ClusterSpec& find_cluster(const std::string& name);

}  // namespace trainsim
