// Writes GpuSpec and ClusterSpec back in the catalog's datasheet units (TFLOP/s, GiB, GB/s, MiB,
// Gbit/s), converting through common/units.hpp.
#include "sim/hardware_json.hpp"

#include "common/units.hpp"

namespace trainsim {

nlohmann::ordered_json gpu_to_json(const GpuSpec& g) {
  nlohmann::ordered_json j;
  j["name"] = g.name;
  j["display_name"] = g.display_name;
  j["peak_bf16_tflops"] = flops_per_s_to_tflops(g.peak_bf16_flops_per_s);
  j["peak_fp16_tflops"] = flops_per_s_to_tflops(g.peak_fp16_flops_per_s);
  j["peak_tf32_tflops"] = flops_per_s_to_tflops(g.peak_tf32_flops_per_s);
  j["peak_fp32_tflops"] = flops_per_s_to_tflops(g.peak_fp32_flops_per_s);
  j["peak_fp8_tflops"] = flops_per_s_to_tflops(g.peak_fp8_flops_per_s);
  if (g.peak_fp4_flops_per_s > 0) j["peak_fp4_tflops"] = flops_per_s_to_tflops(g.peak_fp4_flops_per_s);
  j["memory_gib"] = bytes_to_gib(g.memory_bytes);
  j["memory_bandwidth_gb_per_s"] = bytes_per_s_to_gb_per_s(g.memory_bandwidth_bytes_per_s);
  j["nvlink_gb_per_s_per_direction"] = bytes_per_s_to_gb_per_s(g.nvlink_bandwidth_bytes_per_s);
  j["sm_count"] = g.sm_count;
  j["l2_mib"] = bytes_to_mib(g.l2_bytes);
  j["tdp_w"] = g.power_w;
  j["usd_per_gpu_hour"] = g.usd_per_gpu_hour;
  j["price_source"] = g.price_source;
  j["source"] = g.source;
  return j;
}

nlohmann::ordered_json gpu_capabilities_to_json(const GpuCapabilities& c) {
  nlohmann::ordered_json j;
  j["generation"] = to_string(c.generation);
  j["reference_efficiency"] = to_string(c.reference_family);
  j["nvlink_generation"] = c.nvlink_generation;
  j["nvlink_domain_gpus"] = c.nvlink_domain_gpus;
  if (c.scale_up_fabric != ScaleUpFabric::kSwitch) j["scale_up_fabric"] = to_string(c.scale_up_fabric);
  j["nccl_ll_max_busbw_one_node_gb_per_s"] = bytes_per_s_to_gb_per_s(c.nccl_ll_max_bus_bytes_per_s);
  j["cublas_workspace_mib"] = bytes_to_mib(c.cublas_workspace_bytes);
  j["reference_node_nic_gbps_per_gpu"] = c.reference_node_nic_gbps_per_gpu;
  if (c.host_link_bytes_per_s > 0) j["host_link_gb_per_s_per_direction"] = bytes_per_s_to_gb_per_s(c.host_link_bytes_per_s);
  j["source"] = c.source;
  return j;
}

nlohmann::ordered_json gpu_catalog_entry_to_json(const GpuSpec& g) {
  nlohmann::ordered_json j = gpu_to_json(g);
  j["capabilities"] = gpu_capabilities_to_json(g.capabilities);
  return j;
}

nlohmann::ordered_json cluster_to_json(const ClusterSpec& c) {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["gpu"] = c.gpu;
  j["gpus_per_node"] = c.gpus_per_node;
  j["inter_node_gbps_per_gpu"] = c.inter_node_gbps_per_gpu;
  j["source"] = c.source;
  return j;
}

}  // namespace trainsim
