// Built-in GPUs, cluster presets and prices (configs/hardware.json, compiled in), each figure with
// its source, and the resolution of `--gpu / --cluster / --gpus-per-node / --inter-node-gbps /
// --price` into one Hardware description. A GPU is data: its generation and every capability the
// cost model keys on are catalog keys (GpuCapabilities); no code reads a GPU's name for its figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/parallel_plan.hpp"

namespace trainsim {

// A GPU's silicon generation (CUDA compute capability: Ampere sm_80, Hopper sm_90, Blackwell
// sm_100 / sm_103; AMD's LLVM targets: CDNA 3 gfx942 (MI300X, MI325X), CDNA 4 gfx950 (MI355X)).
// kNone: not a catalog GPU (the CPU host a CPU profile measured).
enum class GpuGeneration { kNone, kAmpere, kHopper, kBlackwell, kCdna3, kCdna4 };
// The reference record set a GPU's GEMM and attention efficiencies rest on (MAMF, attention
// ratios and curve; sim/reference_efficiency.cpp). kNone: no datasheet reference (the CPU host,
// whose measured profile prices its ops): ratios 1.
enum class ReferenceFamily { kNone, kA100, kH100, kH200, kB200, kGB200, kB300, kGB300, kMI300X, kMI325X, kMI355X };
// How a GPU reaches the others of its scale-up domain: through a switch (NVSwitch: every GPU of the
// domain at its full per-GPU bandwidth, whatever the group), or over a full mesh of point-to-point
// links (AMD's 8-GPU Infinity Fabric boards: 7 xGMI links per GPU, one to each peer), where a
// group of g GPUs uses g - 1 of a GPU's links.
enum class ScaleUpFabric { kSwitch, kFullMesh };
const char* to_string(GpuGeneration generation);
const char* to_string(ReferenceFamily family);
const char* to_string(ScaleUpFabric fabric);

// What the cost model keys on, per GPU (configs/hardware.json "capabilities"; the catalog's
// "note" gives each key's source). FP8 support is GpuSpec::peak_fp8_flops_per_s > 0.
struct GpuCapabilities {
  GpuGeneration generation = GpuGeneration::kNone;  // "ampere", "hopper", "blackwell", "cdna3", "cdna4"
  // key "reference_efficiency": "a100", "h100", "h200", "b200", "gb200", "b300", "gb300", "mi300x",
  // "mi325x", "mi355x"
  ReferenceFamily reference_family = ReferenceFamily::kNone;
  // NVLink generation: 3 on A100, 4 on H100/H200, 5 on Blackwell (NVIDIA datasheets); 0 on a GPU
  // whose scale-up links are not NVLink (AMD's xGMI): no NVLink SHARP.
  int64_t nvlink_generation = 0;
  // key "scale_up_fabric": "switch" (the default: NVSwitch) or "full_mesh" (xGMI). On a full mesh
  // the per-GPU scale-up bandwidth (GpuSpec::nvlink_bandwidth_bytes_per_s) is the sum of its
  // nvlink_domain_gpus - 1 links.
  ScaleUpFabric scale_up_fabric = ScaleUpFabric::kSwitch;
  // GPUs one NVSwitch fabric joins: 8 on HGX A100 / H100 / H200 / B200 boards (NVIDIA HGX
  // datasheets), 72 in a GB200 / GB300 NVL72 rack (its NVLink switch trays). The catalog checks
  // that no cluster preset puts more GPUs in a node; the cost model takes a node's GPUs as one
  // NVLink domain (a 72-GPU "node" is the rack).
  int64_t nvlink_domain_gpus = 0;
  // NCCL's LL-protocol bus-bandwidth cap inside one node, bytes/s (llMaxBws, NVIDIA/nccl@5067397c
  // src/graph/tuning.cc: Ampere 87.7, Hopper 141, Blackwell 282 GB/s); 0: LL uncapped (the CPU
  // host; RCCL on AMD parts, whose cap trainsim has no record of).
  double nccl_ll_max_bus_bytes_per_s = 0;
  // cuBLASLt workspace PyTorch >= 2.3 allocates per handle, bytes: 32 MiB on Hopper and newer,
  // 4 MiB on Ampere parts with >= 24 GB (pytorch PR #120925); hipBLASLt's on ROCm, 76 MiB.
  double cublas_workspace_bytes = 0;
  // NIC line rate per GPU of the GPU's reference server, Gbit/s (DGX A100: HDR 200; DGX H100 and
  // H200: NDR 400): the default of a published run that does not state its network, and of
  // `--gpu` without `--cluster` or `--inter-node-gbps` (`--cluster` takes its preset's rate).
  int64_t reference_node_nic_gbps_per_gpu = 0;
  // The GPU's link to its host CPU, bytes/s per direction (PCIe, or NVLink-C2C on Grace boards):
  // what CPU activation offloading copies over. 0: not stated (offloading cannot be priced).
  double host_link_bytes_per_s = 0;
  std::string source;  // where this GPU's capability figures come from
};

struct GpuSpec {
  std::string name;          // catalog key, e.g. "h100-sxm-80gb"
  std::string display_name;  // "NVIDIA H100 SXM5 80GB"
  // Dense (no sparsity) tensor-core peaks, FLOP/s; 0 where the GPU has no such unit (fp8 on A100).
  double peak_bf16_flops_per_s = 0;
  double peak_fp16_flops_per_s = 0;
  double peak_tf32_flops_per_s = 0;
  double peak_fp32_flops_per_s = 0;  // CUDA cores, no tensor cores
  double peak_fp8_flops_per_s = 0;
  // Dense FP4 (NVFP4) tensor-core peak; 0 where the GPU has none (every part before Blackwell).
  double peak_fp4_flops_per_s = 0;
  double memory_bytes = 0;              // HBM capacity as the driver reports it
  double memory_bandwidth_bytes_per_s = 0;
  // Scale-up bandwidth per GPU, per direction: NVLink, or on AMD parts the sum of its xGMI links.
  double nvlink_bandwidth_bytes_per_s = 0;
  int64_t sm_count = 0;
  double l2_bytes = 0;
  double power_w = 0;  // board TDP
  double usd_per_gpu_hour = 0;  // reference on-demand price
  std::string price_source;     // where and when that price was read
  std::string source;           // datasheet the figures come from
  GpuCapabilities capabilities;

  // Peak of the tensor-core path used for `precision`: bf16 -> bf16, fp16 -> fp16, fp32 -> tf32
  // (fp32 training runs its GEMMs on TF32 tensor cores), fp8 -> fp8, mxfp8 -> fp8 on a GPU with
  // block-scaled tensor cores (generation Blackwell: MXFP8 runs at the FP8 rate), nvfp4 -> fp4.
  // There is no fallback: on a GPU without the unit (FP8 on the A100, MXFP8 and NVFP4 before
  // Blackwell) this returns 0, and callers must refuse the plan rather than divide.
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
  // Where inter_node_gbps_per_gpu comes from, for headers: "cluster dgx-h100", "the GPU's reference
  // server", "--inter-node-gbps"; empty when it is Hardware's default.
  std::string network_source;
  // The CPU host runs no CUDA context, caching allocator or NCCL: its memory is its tensors.
  bool is_host() const { return cluster == "host"; }
};

struct HardwareCatalog {
  std::vector<GpuSpec> gpus;
  std::vector<ClusterSpec> clusters;
};

// Parses and checks a catalog in the format of configs/hardware.json (`source` names it in
// messages). Throws InputError listing every problem: a missing or unknown key, a figure out of
// range, a generation or reference_efficiency trainsim has no data for (the message names the key,
// the value and the known ones), a cluster naming an unknown GPU or more GPUs than its NVLink domain.
HardwareCatalog parse_hardware_catalog(const std::string& json_text, const std::string& source);

// The built-in catalog, parsed and checked once on first use (a defect in it is an InternalError).
const std::vector<GpuSpec>& builtin_gpus();
const std::vector<ClusterSpec>& builtin_clusters();
std::vector<std::string> builtin_gpu_names();
std::vector<std::string> builtin_cluster_names();
// Throws InputError naming the unknown GPU, the nearest known one and the full list.
const GpuSpec& find_gpu(const std::string& name);
bool gpu_in_catalog(const std::string& name);
// `--gpu FILE.json`: a GPU a user describes, one entry in the catalog's schema (the object a
// `gpus[]` element of configs/hardware.json holds, checked by the same rules), or a whole catalog
// file with exactly one GPU. Throws InputError naming the file and every problem.
bool names_gpu_file(const std::string& gpu);  // ends in .json
GpuSpec load_gpu_file(const std::string& path);
const ClusterSpec& find_cluster(const std::string& name);

}  // namespace trainsim
