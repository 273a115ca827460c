// Parses a hardware catalog (configs/hardware.json, embedded) with the strict reader, converts its
// datasheet units (TFLOP/s, GB/s, GiB, MiB) to SI bytes and FLOP/s here and only here, checks it
// (positive figures, a known generation and reference set, unique names, clusters naming known
// GPUs), and resolves `--gpu` / `--cluster` names. The built-in catalog's defects are internal errors.
#include "sim/hardware_catalog.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

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

// The generations and reference sets trainsim has data for; each reference set belongs to one
// generation (its records were measured on that silicon).
struct GenerationName {
  GpuGeneration generation;
  const char* name;
};
constexpr GenerationName kGenerations[] = {{GpuGeneration::kAmpere, "ampere"},       {GpuGeneration::kHopper, "hopper"},
                                           {GpuGeneration::kBlackwell, "blackwell"}, {GpuGeneration::kCdna3, "cdna3"},
                                           {GpuGeneration::kCdna4, "cdna4"}};

struct FamilyName {
  ReferenceFamily family;
  const char* name;
  GpuGeneration generation;
};
constexpr FamilyName kFamilies[] = {{ReferenceFamily::kA100, "a100", GpuGeneration::kAmpere},
                                    {ReferenceFamily::kH100, "h100", GpuGeneration::kHopper},
                                    {ReferenceFamily::kH200, "h200", GpuGeneration::kHopper},
                                    {ReferenceFamily::kB200, "b200", GpuGeneration::kBlackwell},
                                    {ReferenceFamily::kGB200, "gb200", GpuGeneration::kBlackwell},
                                    {ReferenceFamily::kB300, "b300", GpuGeneration::kBlackwell},
                                    {ReferenceFamily::kGB300, "gb300", GpuGeneration::kBlackwell},
                                    {ReferenceFamily::kMI300X, "mi300x", GpuGeneration::kCdna3},
                                    {ReferenceFamily::kMI325X, "mi325x", GpuGeneration::kCdna3},
                                    {ReferenceFamily::kMI355X, "mi355x", GpuGeneration::kCdna4}};

struct FabricName {
  ScaleUpFabric fabric;
  const char* name;
};
constexpr FabricName kFabrics[] = {{ScaleUpFabric::kSwitch, "switch"}, {ScaleUpFabric::kFullMesh, "full_mesh"}};

template <typename Entry>
std::vector<std::string> names_of(const Entry& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

// The entry of `entries` named by string `key`, or nullptr (with a problem naming the key, the
// value and the known names) when it is missing or unknown.
template <typename Entry, size_t N>
const Entry* read_known(JsonObjectReader& r, const std::string& key, const Entry (&entries)[N], const char* what) {
  const bool present = r.has(key);
  const std::string value = r.required_string(key);
  if (!present) return nullptr;
  for (const Entry& e : entries) {
    if (value == e.name) return &e;
  }
  const std::vector<std::string> names = names_of(entries);
  r.add_problem(key, "\"" + value + "\" is not a " + what + " trainsim has data for (known: " + join_names(names) + ")" +
                         did_you_mean(value, names));
  return nullptr;
}

GpuCapabilities read_capabilities(JsonObjectReader& r) {
  GpuCapabilities c;
  const GenerationName* generation = read_known(r, "generation", kGenerations, "GPU generation");
  const FamilyName* family = read_known(r, "reference_efficiency", kFamilies, "reference efficiency set");
  if (generation != nullptr) c.generation = generation->generation;
  if (family != nullptr) c.reference_family = family->family;
  if (generation != nullptr && family != nullptr && family->generation != generation->generation) {
    const std::string measured_on = to_string(family->generation);
    r.add_problem("reference_efficiency", std::string(family->name) + " records were measured on " + measured_on +
                                              " silicon, but generation is " + generation->name);
  }
  c.nvlink_generation = r.required_int("nvlink_generation", 0);
  c.nvlink_domain_gpus = r.required_int("nvlink_domain_gpus", 1);
  if (r.has("scale_up_fabric")) {  // absent: a switch, as on every NVIDIA board
    const FabricName* fabric = read_known(r, "scale_up_fabric", kFabrics, "scale-up fabric");
    if (fabric != nullptr) c.scale_up_fabric = fabric->fabric;
    if (c.scale_up_fabric == ScaleUpFabric::kFullMesh && c.nvlink_domain_gpus < 2) {
      r.add_problem("scale_up_fabric", "a full mesh needs nvlink_domain_gpus >= 2 (its GPUs' links are domain - 1 each)");
    }
  }
  // 0: no LL cap known (RCCL); the NVIDIA parts state NCCL's.
  c.nccl_ll_max_bus_bytes_per_s = gb_per_s_to_bytes_per_s(required_number(r, "nccl_ll_max_busbw_one_node_gb_per_s", 0));
  c.cublas_workspace_bytes = mib_to_bytes(required_positive(r, "cublas_workspace_mib"));
  c.reference_node_nic_gbps_per_gpu = r.required_int("reference_node_nic_gbps_per_gpu", 1);
  c.host_link_bytes_per_s = gb_per_s_to_bytes_per_s(r.optional_number("host_link_gb_per_s_per_direction", 1e-3).value_or(0.0));
  c.source = r.required_string("source");
  r.reject_unknown_keys();
  return c;
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
  g.peak_fp4_flops_per_s = tflops_to_flops_per_s(r.optional_number("peak_fp4_tflops", 0.0).value_or(0.0));  // absent: no fp4
  g.memory_bytes = gib_to_bytes(required_positive(r, "memory_gib"));
  g.memory_bandwidth_bytes_per_s = gb_per_s_to_bytes_per_s(required_positive(r, "memory_bandwidth_gb_per_s"));
  g.nvlink_bandwidth_bytes_per_s = gb_per_s_to_bytes_per_s(required_positive(r, "nvlink_gb_per_s_per_direction"));
  g.sm_count = r.required_int("sm_count", 1);
  g.l2_bytes = mib_to_bytes(required_positive(r, "l2_mib"));
  g.power_w = required_positive(r, "tdp_w");
  g.usd_per_gpu_hour = required_positive(r, "usd_per_gpu_hour");
  g.price_source = r.required_string("price_source");
  g.source = r.required_string("source");
  JsonObjectReader capabilities = r.required_object("capabilities");
  g.capabilities = read_capabilities(capabilities);
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
    problems.add(root.file() + ": /" + key + ": missing, not an array, or empty");
    return;
  }
  root.accept(key);
  for (size_t i = 0; i < doc[key].size(); ++i) {
    JsonObjectReader entry(doc[key][i], root.file(), "/" + key + "/" + std::to_string(i), problems);
    read(entry);
  }
}

// Names unique; each cluster names a known GPU and fits in its NVLink domain.
void check_names(const HardwareCatalog& catalog, const std::string& source, ProblemList& problems) {
  std::set<std::string> gpu_names, cluster_names;
  for (const auto& g : catalog.gpus) {
    if (!gpu_names.insert(g.name).second) problems.add(source + ": GPU \"" + g.name + "\" listed twice");
  }
  for (const auto& c : catalog.clusters) {
    if (!cluster_names.insert(c.name).second) problems.add(source + ": cluster \"" + c.name + "\" listed twice");
    const auto gpu = std::find_if(catalog.gpus.begin(), catalog.gpus.end(), [&](const GpuSpec& g) { return g.name == c.gpu; });
    if (gpu == catalog.gpus.end()) {
      problems.add(source + ": cluster \"" + c.name + "\" names unknown GPU \"" + c.gpu + "\"");
    } else if (c.gpus_per_node > gpu->capabilities.nvlink_domain_gpus) {
      problems.add(source + ": cluster \"" + c.name + "\": gpus_per_node (" + std::to_string(c.gpus_per_node) +
                   ") exceeds the NVLink domain of " + c.gpu + " (nvlink_domain_gpus " +
                   std::to_string(gpu->capabilities.nvlink_domain_gpus) + ")");
    }
  }
}

const HardwareCatalog& catalog() {
  static const HardwareCatalog parsed = [] {
    try {
      return parse_hardware_catalog(kBuiltinHardwareJson, kSource);
    } catch (const InputError& e) {
      fail_internal("parse_hardware_catalog", __FILE__, __LINE__,
                    "the built-in hardware catalog is invalid: " + join_names(e.problems(), "; "));
    }
  }();
  return parsed;
}

}  // namespace

const char* to_string(GpuGeneration generation) {
  for (const GenerationName& g : kGenerations) {
    if (g.generation == generation) return g.name;
  }
  return "none";
}

const char* to_string(ReferenceFamily family) {
  for (const FamilyName& f : kFamilies) {
    if (f.family == family) return f.name;
  }
  return "none";
}

const char* to_string(ScaleUpFabric fabric) {
  for (const FabricName& f : kFabrics) {
    if (f.fabric == fabric) return f.name;
  }
  return "none";
}

HardwareCatalog parse_hardware_catalog(const std::string& json_text, const std::string& source) {
  const nlohmann::json doc = parse_json_text(json_text, source);
  ProblemList problems;
  JsonObjectReader root(doc, source, "", problems);
  root.required_choice("schema", {"trainsim.hardware_catalog"});
  const bool versioned = root.has("schema_version");
  const int64_t version = root.required_int("schema_version", 1);
  if (versioned && version != 2) {
    root.add_problem("schema_version", std::to_string(version) + " is not 2 (the version whose GPUs carry \"capabilities\")");
  }
  root.accept("note");
  HardwareCatalog catalog;
  read_array(doc, root, "gpus", problems, [&](JsonObjectReader& r) { catalog.gpus.push_back(read_gpu(r)); });
  read_array(doc, root, "clusters", problems,
             [&](JsonObjectReader& r) { catalog.clusters.push_back(read_cluster(r)); });
  root.reject_unknown_keys();
  check_names(catalog, source, problems);
  problems.throw_if_any("a GPU's capabilities.generation and capabilities.reference_efficiency must be ones trainsim has "
                        "records for: a new generation needs its own measured records in sim/reference_efficiency.cpp "
                        "(docs/cost-model.md \"GPUs as data\"), never another GPU's");
  return catalog;
}

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
    case Precision::kMxfp8:
      return capabilities.generation == GpuGeneration::kBlackwell ? peak_fp8_flops_per_s : 0.0;
    case Precision::kNvfp4:
      return peak_fp4_flops_per_s;
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
  throw InputError("--gpu: unknown GPU \"" + name + "\"" + did_you_mean_any(name, names),
                   "built-in GPUs: " + join_names(names) + " (`trainsim catalog` lists their figures)");
}

bool names_gpu_file(const std::string& gpu) { return gpu.size() > 5 && gpu.compare(gpu.size() - 5, 5, ".json") == 0; }

GpuSpec load_gpu_file(const std::string& path) {
  const char* const hint = "--gpu FILE.json takes one GPU entry in the schema of configs/hardware.json's \"gpus\" (name, "
                           "peaks, memory, NVLink, capabilities with a generation trainsim has records for): "
                           "`trainsim catalog --format json` prints every built-in entry to start from";
  std::ifstream in(path);
  if (!in) throw InputError("--gpu " + path + ": cannot read the file (missing or unreadable)", hint);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = parse_json_text(text.str(), path);
  if (!doc.is_object()) throw InputError(path + ": expected a JSON object (one GPU entry), got " + std::string(doc.type_name()), hint);
  if (doc.contains("gpus")) {  // a whole catalog file: it must hold exactly one GPU
    HardwareCatalog c = parse_hardware_catalog(text.str(), path);
    if (c.gpus.size() != 1) {
      throw InputError(path + ": holds " + std::to_string(c.gpus.size()) + " GPUs; --gpu FILE.json takes exactly one", hint);
    }
    return c.gpus.front();
  }
  ProblemList problems;  // one entry, read and checked as the catalog reads each of its GPUs
  JsonObjectReader r(doc, path, "", problems);
  GpuSpec g = read_gpu(r);
  problems.throw_if_any(hint);
  return g;
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
  throw InputError("--cluster: unknown cluster \"" + name + "\"" + did_you_mean_any(name, names),
                   "built-in clusters: " + join_names(names) +
                       "; or describe your own with --gpu, --gpus-per-node and --inter-node-gbps");
}

}  // namespace trainsim
