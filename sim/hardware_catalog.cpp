// Parses the embedded hardware catalog (configs/hardware.json) once with the strict reader,
// converts its datasheet units (TFLOP/s, GB/s, GiB, MiB) to SI bytes and FLOP/s here and only
// here, checks it (positive figures, unique names, clusters naming known GPUs), and resolves
// `--gpu` / `--cluster` names. The catalog is built in, so any defect is an internal error.
#include "sim/hardware_catalog.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/nearest_name.hpp"
#include "common/units.hpp"

namespace trainsim {

extern const char* const kBuiltinHardwareJson;  // generated from configs/hardware.json

namespace {

const char* const kSource = "configs/hardware.json (built in)";

// A required number >= `min_value`; 0 (with a problem recorded) when missing or invalid.
double required_number(JsonObjectReader& r, const std::string& key, double min_value) {
  if (r.ok() && !r.has(key)) {
    r.add_problem(key, "missing required key \"" + key + "\" (a number >= " + nlohmann::json(min_value).dump() + ")");
    r.accept(key);
    return 0;
  }
  return r.optional_number(key, min_value).value_or(0);
}

// A required number > 0.
double required_positive(JsonObjectReader& r, const std::string& key) {
  const bool present = r.has(key);
  const double x = required_number(r, key, 0);
  if (present && x == 0) r.add_problem(key, key + " (0) must be > 0");
  return x;
}

GpuSpec read_gpu(JsonObjectReader& r) {
  GpuSpec g;
  g.name = r.required_string("name");
  g.display_name = r.required_string("display_name");
  g.peak_bf16_flops_per_s = tflops_to_flops_per_s(required_positive(r, "peak_bf16_tflops"));
  g.peak_fp16_flops_per_s = tflops_to_flops_per_s(required_positive(r, "peak_fp16_tflops"));
  g.peak_tf32_flops_per_s = tflops_to_flops_per_s(required_positive(r, "peak_tf32_tflops"));
  g.peak_fp32_flops_per_s = tflops_to_flops_per_s(required_positive(r, "peak_fp32_tflops"));
  g.peak_fp8_flops_per_s = tflops_to_flops_per_s(required_number(r, "peak_fp8_tflops", 0));  // 0: no fp8
  g.memory_bytes = gib_to_bytes(required_positive(r, "memory_gib"));
  g.memory_bandwidth_bytes_per_s = gb_per_s_to_bytes_per_s(required_positive(r, "memory_bandwidth_gb_per_s"));
  g.nvlink_bandwidth_bytes_per_s = gb_per_s_to_bytes_per_s(required_positive(r, "nvlink_gb_per_s_per_direction"));
  g.sm_count = r.required_int("sm_count", 1);
  g.l2_bytes = mib_to_bytes(required_positive(r, "l2_mib"));
  g.power_w = required_positive(r, "tdp_w");
  g.usd_per_gpu_hour = required_positive(r, "usd_per_gpu_hour");
  g.price_source = r.required_string("price_source");
  g.source = r.required_string("source");
  r.reject_unknown_keys();
  return g;
}

ClusterSpec read_cluster(JsonObjectReader& r) {
  ClusterSpec c;
  c.name = r.required_string("name");
  c.gpu = r.required_string("gpu");
  c.gpus_per_node = r.required_int("gpus_per_node", 1);
  c.inter_node_gbps_per_gpu = required_positive(r, "inter_node_gbps_per_gpu");
  c.source = r.required_string("source");
  r.reject_unknown_keys();
  return c;
}

// Reads `key` of the root as an array of objects, calling `read` on each entry.
template <typename Read>
void read_array(const nlohmann::json& doc, JsonObjectReader& root, const std::string& key, ProblemList& problems,
                Read read) {
  if (!doc.contains(key) || !doc[key].is_array() || doc[key].empty()) {
    problems.add(std::string(kSource) + ": /" + key + ": missing, not an array, or empty");
    return;
  }
  root.accept(key);
  for (size_t i = 0; i < doc[key].size(); ++i) {
    JsonObjectReader entry(doc[key][i], kSource, "/" + key + "/" + std::to_string(i), problems);
    read(entry);
  }
}

struct Catalog {
  std::vector<GpuSpec> gpus;
  std::vector<ClusterSpec> clusters;
};

Catalog parse_catalog() {
  const nlohmann::json doc = parse_json_text(kBuiltinHardwareJson, kSource);
  ProblemList problems;
  JsonObjectReader root(doc, kSource, "", problems);
  root.required_choice("schema", {"trainsim.hardware_catalog"});
  root.required_int("schema_version", 1);
  root.accept("note");
  Catalog catalog;
  read_array(doc, root, "gpus", problems, [&](JsonObjectReader& r) { catalog.gpus.push_back(read_gpu(r)); });
  read_array(doc, root, "clusters", problems,
             [&](JsonObjectReader& r) { catalog.clusters.push_back(read_cluster(r)); });
  root.reject_unknown_keys();

  std::set<std::string> gpu_names, cluster_names;
  for (const auto& g : catalog.gpus) {
    if (!gpu_names.insert(g.name).second) problems.add(std::string(kSource) + ": GPU \"" + g.name + "\" listed twice");
  }
  for (const auto& c : catalog.clusters) {
    if (!cluster_names.insert(c.name).second) {
      problems.add(std::string(kSource) + ": cluster \"" + c.name + "\" listed twice");
    }
    if (!gpu_names.contains(c.gpu)) {
      problems.add(std::string(kSource) + ": cluster \"" + c.name + "\" names unknown GPU \"" + c.gpu + "\"");
    }
  }
  TRAINSIM_ASSERT(problems.empty(), "the built-in hardware catalog is invalid: " + join_names(problems.items(), "; "));
  return catalog;
}

const Catalog& catalog() {
  static const Catalog parsed = parse_catalog();
  return parsed;
}

}  // namespace

double GpuSpec::peak_flops_per_s(Precision precision) const {
  switch (precision) {
    case Precision::kBf16:
      return peak_bf16_flops_per_s;
    case Precision::kFp16:
      return peak_fp16_flops_per_s;
    case Precision::kFp32:
      return peak_tf32_flops_per_s;
    case Precision::kFp8:
      return peak_fp8_flops_per_s;  // 0 on GPUs without fp8 tensor cores: the caller refuses
  }
  TRAINSIM_ASSERT(false, "unhandled precision");
  return 0;
}

const std::vector<GpuSpec>& builtin_gpus() { return catalog().gpus; }

const std::vector<ClusterSpec>& builtin_clusters() { return catalog().clusters; }

std::vector<std::string> builtin_gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : builtin_gpus()) names.push_back(g.name);
  return names;
}

std::vector<std::string> builtin_cluster_names() {
  std::vector<std::string> names;
  for (const auto& c : builtin_clusters()) names.push_back(c.name);
  return names;
}

const GpuSpec& find_gpu(const std::string& name) {
  for (const auto& g : builtin_gpus()) {
    if (g.name == name) return g;
  }
  const std::vector<std::string> names = builtin_gpu_names();
  throw InputError("--gpu: unknown GPU \"" + name + "\"" + did_you_mean(name, names),
                   "built-in GPUs: " + join_names(names) + " (`trainsim catalog` lists their figures)");
}

bool gpu_in_catalog(const std::string& name) {
  const std::vector<std::string> names = builtin_gpu_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

const ClusterSpec& find_cluster(const std::string& name) {
  for (const auto& c : builtin_clusters()) {
    if (c.name == name) return c;
  }
  const std::vector<std::string> names = builtin_cluster_names();
  throw InputError("--cluster: unknown cluster \"" + name + "\"" + did_you_mean(name, names),
                   "built-in clusters: " + join_names(names) +
                       "; or describe your own with --gpu, --gpus-per-node and --inter-node-gbps");
}

}  // namespace trainsim
