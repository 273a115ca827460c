// Binding and resolution of the hardware and output options (cli/shared_options.hpp): the GPU or
// cluster, network what-ifs, a measured profile, the price, and --format.
#include <CLI/CLI.hpp>

#include <algorithm>

#include "cli/gpu_prices.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "common/limits.hpp"
#include "common/profile_json.hpp"
#include "common/units.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/profiled_cost_model.hpp"

namespace trainsim {

void HardwareOptions::add_to(CLI::App& app) {
  options["gpu"] = app.add_option("--gpu", gpu, "GPU type (trainsim catalog lists them), or FILE.json: your own GPU, one entry in "
                                                "the catalog's schema (docs/cost-model.md)");
  options["cluster"] = app.add_option("--cluster", cluster, "cluster preset: GPU type, GPUs per node, network");
  options["gpus-per-node"] = app.add_option("--gpus-per-node", gpus_per_node, "GPUs per node (default 8)")
                                 ->transform(whole_number(1, limits::kMaxGpusPerNode, "GPUs"));
  options["inter-node-gbps"] = app.add_option("--inter-node-gbps", inter_node_gbps,
                                              "inter-node bandwidth per GPU, Gbit/s (default: the cluster's, or the NIC rate of the GPU's reference server: "
                                              "200 for A100, 400 for H100/H200)")
                                   ->check(real_number(0, 1e6, "Gbit/s per GPU"));
  options["nvlink-gb-per-s"] = app.add_option("--nvlink-gb-per-s", nvlink_gb_per_s,
                                              "what-if: NVLink bandwidth per GPU per direction, GB/s (default: the GPU's)")
                                   ->check(real_number(0, 1e6, "GB/s per GPU"));
  options["peak-tflops"] = app.add_option("--peak-tflops", peak_tflops,
                                          "what-if: dense 16-bit (BF16/FP16) tensor-core peak, TFLOP/s; the GPU's other tensor "
                                          "peaks (FP8, TF32) scale with it (default: the GPU's)")
                               ->check(real_number(0, 1e6, "TFLOP/s"));
  options["hbm-gb-per-s"] = app.add_option("--hbm-gb-per-s", hbm_gb_per_s, "what-if: HBM bandwidth, GB/s (default: the GPU's)")
                                ->check(real_number(0, 1e6, "GB/s"));
  options["memory-gib"] = app.add_option("--memory-gib", memory_gib, "what-if: device memory, GiB (default: the GPU's)")
                              ->check(real_number(0, 1e6, "GiB"));
  options["nvlink-domain"] = app.add_option("--nvlink-domain", nvlink_domain,
                                            "what-if: GPUs one NVLink domain joins (8 on HGX boards, 72 in an NVL72 rack); "
                                            "collectives inside it run on NVLink, beyond it on the NIC (default: the GPU's)")
                                 ->transform(whole_number(1, limits::kMaxGpusPerNode, "GPUs"));
  options["profile"] = app.add_option("--profile", profile_path, "a measured hardware profile (trainsim calibrate); "
                                      "datasheet mode without it");
  options["allow-extrapolation"] = app.add_flag("--allow-extrapolation", allow_extrapolation,
                                                "price ops outside the profile's measurements (they are listed)");
  options["price"] = app.add_option("--price", price,
                                    "USD per GPU-hour (default: the catalog's reference price); with several --gpu types, one "
                                    "per type: h100-sxm-80gb=2.50,h200-sxm-141gb=3.80")
                          ->check(CLI::Validator(
                              [](std::string& text) -> std::string {
                                try {
                                  parse_gpu_prices(text);
                                } catch (const InputError& e) {
                                  const std::string& problem = e.problems().front();
                                  return problem.substr(problem.rfind("--price: ", 0) == 0 ? 9 : 0) + "\nhint: " + e.hint();
                                }
                                return "";
                              },
                              "USD or GPU=USD[,GPU=USD...]"));
}

bool HardwareOptions::given(const std::string& name) const {
  const auto it = options.find(name);
  return it != options.end() && it->second->count() > 0;
}

std::vector<std::string> HardwareOptions::gpu_names() const {
  std::vector<std::string> names;
  if (!given("gpu")) {
    if (given("cluster")) names.push_back(find_cluster(cluster).gpu);
    return names;
  }
  size_t begin = 0;
  while (begin <= gpu.size()) {
    const size_t comma = gpu.find(',', begin);
    const std::string name = gpu.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (!name.empty()) names.push_back(name);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return names;
}

Hardware HardwareOptions::resolve_gpu(const std::string& gpu_name, int64_t gpus, Precision precision) const {
  HardwareOptions one = *this;
  one.compared_gpus_ = gpu_names();
  one.gpu = gpu_name;
  ParallelPlan plan;
  plan.dp = gpus;
  plan.precision = precision;
  if (given("cluster") && find_cluster(cluster).gpu != gpu_name) one.options.erase("cluster");
  return one.resolve(plan);
}

const CostModelChoice& HardwareOptions::costs() const {
  if (!costs_) {
    CostModelChoice choice;
    if (given("profile")) {
      choice.profile = load_profile(profile_path);
      choice.profile_path = profile_path;
    }
    choice.allow_extrapolation = allow_extrapolation;
    costs_ = std::move(choice);
  }
  return *costs_;
}

Hardware HardwareOptions::resolve(const ParallelPlan& plan) const {
  Hardware hw;
  hw.cluster = "custom";
  if (given("gpu") && gpu == "cpu") {
    const CostModelChoice& c = costs();
    if (!c.profile || c.profile->provenance.device_kind != "cpu") {
      throw InputError("--gpu cpu needs --profile of a CPU (from `trainsim calibrate cpu`)",
                       "the host has no datasheet: its figures come from its measured profile");
    }
    for (const char* what_if : {"peak-tflops", "hbm-gb-per-s", "memory-gib", "nvlink-gb-per-s", "nvlink-domain"}) {
      if (given(what_if)) {
        throw InputError("--" + std::string(what_if) + " changes a datasheet figure, and --gpu cpu has no datasheet",
                         "the host's figures are its --profile's measurements; the what-ifs apply to catalog GPUs and "
                         "--gpu FILE.json");
      }
    }
    hw.cluster = "host";
    hw.gpu = device_from_cpu_profile(*c.profile);
    hw.gpus_per_node = given("gpus-per-node") ? gpus_per_node : std::max<int64_t>(plan.gpus(), c.profile->provenance.devices);
    hw.inter_node_gbps_per_gpu = given("inter-node-gbps") ? inter_node_gbps : 10;
    hw.usd_per_gpu_hour = given("price") ? price_for(parse_gpu_prices(price), "cpu", {"cpu"}).value_or(0.0) : 0.0;
    hw.gpus = plan.gpus();
    return hw;
  }
  if (given("cluster")) {
    const ClusterSpec& c = find_cluster(cluster);
    hw.cluster = c.name;
    hw.gpu = find_gpu(c.gpu);
    hw.gpus_per_node = c.gpus_per_node;
    hw.inter_node_gbps_per_gpu = c.inter_node_gbps_per_gpu;
    if (given("gpu") && gpu != c.gpu) {
      throw InputError("--gpu: \"" + gpu + "\" contradicts --cluster " + c.name + " (which has " + c.gpu + ")",
                       "give one of them, or --gpus-per-node and --inter-node-gbps instead of --cluster");
    }
    hw.network_source = "cluster " + c.name;
  } else if (given("gpu")) {
    hw.gpu = names_gpu_file(gpu) ? load_gpu_file(gpu) : find_gpu(gpu);
    // A node is the GPU's NVLink domain: 8 on HGX boards, the rack of an NVL72.
    if (hw.gpu.capabilities.nvlink_domain_gpus > 0) hw.gpus_per_node = hw.gpu.capabilities.nvlink_domain_gpus;
    // The NIC rate of the GPU's reference server (DGX A100: 200, DGX H100/H200: 400 Gb/s per GPU).
    if (hw.gpu.capabilities.reference_node_nic_gbps_per_gpu > 0) {
      hw.inter_node_gbps_per_gpu = static_cast<double>(hw.gpu.capabilities.reference_node_nic_gbps_per_gpu);
      hw.network_source = "the GPU's reference server";
    }
  } else {
    throw InputError("missing --gpu or --cluster: trainsim needs to know the hardware",
                     "e.g. --gpu h100-sxm-80gb, or --cluster dgx-h100; `trainsim catalog` lists them");
  }
  if (given("gpus-per-node")) hw.gpus_per_node = gpus_per_node;
  if (given("inter-node-gbps")) {
    hw.inter_node_gbps_per_gpu = inter_node_gbps;
    hw.network_source = "--inter-node-gbps";
  }
  apply_what_ifs(hw);
  const std::optional<double> usd = given("price") ? price_for(parse_gpu_prices(price), hw.gpu.name, compared_gpus_.empty() ? gpu_names() : compared_gpus_) : std::nullopt;
  hw.usd_per_gpu_hour = usd.value_or(hw.gpu.usd_per_gpu_hour);
  hw.gpus = plan.gpus();
  if (hw.gpu.peak_flops_per_s(plan.precision) <= 0) {
    std::string has;
    for (const Precision p : {Precision::kBf16, Precision::kFp16, Precision::kFp32, Precision::kFp8, Precision::kMxfp8, Precision::kNvfp4}) {
      if (hw.gpu.peak_flops_per_s(p) > 0) has += (has.empty() ? "" : ", ") + std::string(to_string(p));
    }
    throw InputError("--precision: " + std::string(to_string(plan.precision)) + " is not supported by " + hw.gpu.name +
                         " (no tensor-core peak for it" +
                         (plan.precision == Precision::kMxfp8 || plan.precision == Precision::kNvfp4
                              ? "; MXFP8 and NVFP4 are priced on Blackwell's block-scaled tensor cores only: Transformer Engine's "
                                "recipes there are the only MX-format training kernels in trainsim's references)"
                              : ")"),
                     "this GPU trains in " + has);
  }
  return hw;
}

void HardwareOptions::apply_what_ifs(Hardware& hw) const {
  GpuSpec& g = hw.gpu;
  std::string changed;
  const auto note = [&](const std::string& option, double from, double to) {
    changed += (changed.empty() ? "" : ", ") + option + " " + option_number_text(to) + " (the GPU's: " + option_number_text(from) + ")";
  };
  if (given("peak-tflops")) {
    // Every tensor-core peak scales by one factor, so the GPU's FP8 : BF16 : TF32 ratios stay
    // (FP8 at twice the 16-bit peak on Hopper and Blackwell); the CUDA-core FP32 peak is kept.
    const double scale = tflops_to_flops_per_s(peak_tflops) / g.peak_bf16_flops_per_s;
    note("--peak-tflops", flops_per_s_to_tflops(g.peak_bf16_flops_per_s), peak_tflops);
    g.peak_bf16_flops_per_s *= scale;
    g.peak_fp16_flops_per_s *= scale;
    g.peak_tf32_flops_per_s *= scale;
    g.peak_fp8_flops_per_s *= scale;
    g.peak_fp4_flops_per_s *= scale;
  }
  if (given("hbm-gb-per-s")) {
    note("--hbm-gb-per-s", bytes_per_s_to_gb_per_s(g.memory_bandwidth_bytes_per_s), hbm_gb_per_s);
    g.memory_bandwidth_bytes_per_s = gb_per_s_to_bytes_per_s(hbm_gb_per_s);
  }
  if (given("memory-gib")) {
    note("--memory-gib", bytes_to_gib(g.memory_bytes), memory_gib);
    g.memory_bytes = gib_to_bytes(memory_gib);
  }
  if (given("nvlink-gb-per-s")) {
    note("--nvlink-gb-per-s", bytes_per_s_to_gb_per_s(g.nvlink_bandwidth_bytes_per_s), nvlink_gb_per_s);
    g.nvlink_bandwidth_bytes_per_s = gb_per_s_to_bytes_per_s(nvlink_gb_per_s);
  }
  if (given("nvlink-domain")) {
    // The cost model takes a node's GPUs as one NVLink domain: the domain is the node.
    if (given("gpus-per-node") && gpus_per_node != nvlink_domain) {
      throw InputError("--nvlink-domain " + std::to_string(nvlink_domain) + " contradicts --gpus-per-node " +
                           std::to_string(gpus_per_node) + ": trainsim takes a node's GPUs as one NVLink domain",
                       "give one of them (both set the GPUs that reach each other over NVLink)");
    }
    note("--nvlink-domain", static_cast<double>(g.capabilities.nvlink_domain_gpus), static_cast<double>(nvlink_domain));
    if (g.capabilities.scale_up_fabric == ScaleUpFabric::kFullMesh && nvlink_domain != g.capabilities.nvlink_domain_gpus) {
      // A full mesh is the board it was built as (AMD's 8 GPUs, 7 links each): a larger or smaller
      // domain is asked of a switch, every group at the GPU's whole scale-up bandwidth.
      g.capabilities.scale_up_fabric = ScaleUpFabric::kSwitch;
      changed += " as a switch (the GPU's full mesh is a board of " + std::to_string(g.capabilities.nvlink_domain_gpus) + ")";
    }
    g.capabilities.nvlink_domain_gpus = nvlink_domain;
    hw.gpus_per_node = nvlink_domain;
  }
  if (!changed.empty()) g.source += "; what-if: " + changed;
}

void FormatOption::add_to(CLI::App& app) {
  app.add_option("--format", format, "output format")->check(CLI::IsMember({"table", "json"}));
}

}  // namespace trainsim
