// The target table and the seed corpus of fuzz/fuzz_targets.hpp. The target functions are the
// LLVMFuzzerTestOneInput of fuzz/targets/<name>.cpp, renamed trainsim_fuzz_<name> by the build.
#include "fuzz/fuzz_targets.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/fuzz_input.hpp"
#include "runtime/checkpoint.hpp"

#define TRAINSIM_DECLARE_FUZZ_TARGET(name) extern "C" int trainsim_fuzz_##name(const uint8_t*, size_t);
TRAINSIM_DECLARE_FUZZ_TARGET(model_json)
TRAINSIM_DECLARE_FUZZ_TARGET(hf_config)
TRAINSIM_DECLARE_FUZZ_TARGET(plan_json)
TRAINSIM_DECLARE_FUZZ_TARGET(profile_json)
TRAINSIM_DECLARE_FUZZ_TARGET(published_runs)
TRAINSIM_DECLARE_FUZZ_TARGET(measurement_json)
TRAINSIM_DECLARE_FUZZ_TARGET(predicted_run)
TRAINSIM_DECLARE_FUZZ_TARGET(megatron_args)
TRAINSIM_DECLARE_FUZZ_TARGET(deepspeed_config)
TRAINSIM_DECLARE_FUZZ_TARGET(torchtitan_toml)
TRAINSIM_DECLARE_FUZZ_TARGET(nemo_yaml)
TRAINSIM_DECLARE_FUZZ_TARGET(checkpoint)
TRAINSIM_DECLARE_FUZZ_TARGET(kineto_trace)
#undef TRAINSIM_DECLARE_FUZZ_TARGET

namespace trainsim::fuzz {

namespace fs = std::filesystem;

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"model_json", trainsim_fuzz_model_json, {"tests/data/models", "tests/data/bad"}, {".json"}},
      {"hf_config", trainsim_fuzz_hf_config, {"tests/data/hf", "tests/data/bad/hf_falcon"}, {".json"}},
      {"plan_json", trainsim_fuzz_plan_json, {"tests/data/plans", "tests/data/bad/plan_unknown_key.json"}, {".json"}},
      {"profile_json", trainsim_fuzz_profile_json, {"tests/data/profiles", "tests/data/bad_profiles"}, {".json"}},
      // Excerpts: the full files (337 and 91 runs) make each iteration slow and dilute the mutations.
      {"published_runs", trainsim_fuzz_published_runs,
       {"fuzz/seeds/published_runs", "tests/data/validation/unsupported-only.json"}, {".json"}},
      {"measurement_json", trainsim_fuzz_measurement_json, {"tests/data/compare"}, {".json"}},
      {"predicted_run", trainsim_fuzz_predicted_run,
       {"tests/data/compare/prediction.json", "tests/data/compare/prediction_ops.json", "tests/data/goodput/prediction.json"},
       {".json"}},
      {"megatron_args", trainsim_fuzz_megatron_args, {"tests/data/import"}, {".sh"}},
      {"deepspeed_config", trainsim_fuzz_deepspeed_config, {"tests/data/import"}, {".json"}},
      {"torchtitan_toml", trainsim_fuzz_torchtitan_toml, {"tests/data/import"}, {".toml"}},
      {"nemo_yaml", trainsim_fuzz_nemo_yaml, {"tests/data/import"}, {".yaml"}},
      {"checkpoint", trainsim_fuzz_checkpoint, {"tests/data/bad_checkpoint"}, {".ckpt"}},
      // Small traces only: the public ones (1-26 MB of JSON) would make each iteration slow.
      {"kineto_trace", trainsim_fuzz_kineto_trace, {"tests/data/traces", "fuzz/seeds/kineto_trace"}, {".json", ".json.gz"}},
  };
  return targets;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

namespace {

// A small valid checkpoint (two tensors) in the current format, by the runtime's own writer.
std::string valid_checkpoint() {
  runtime::CheckpointData data;
  runtime::CheckpointHeader& h = data.header;
  h.world_size = 2, h.dp = 2, h.tp = 1, h.pp = 1, h.layers = 2, h.hidden = 8, h.vocab = 16, h.seq_len = 4;
  h.seed = 1234, h.iteration = 3, h.optimizer_step = 4;
  data.tensors = {std::vector<float>{1.0f, -2.0f, 0.5f}, std::vector<float>(8, 0.25f)};
  const std::string path = scratch_dir() + "/seed.ckpt";
  runtime::write_checkpoint(path, data);
  return read_file_bytes(path);
}

bool has_extension(const fs::path& path, const std::vector<std::string>& extensions) {
  return std::any_of(extensions.begin(), extensions.end(), [&](const std::string& e) { return path.string().ends_with(e); });
}

}  // namespace

std::vector<std::string> load_seeds(const FuzzTarget& target, const std::string& root) {
  std::vector<std::string> files;
  for (const std::string& relative : target.seed_paths) {
    const fs::path path = fs::path(root) / relative;
    if (fs::is_regular_file(path)) files.push_back(path.string());
    if (!fs::is_directory(path)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(path)) {
      if (entry.is_regular_file() && has_extension(entry.path(), target.extensions)) files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::vector<std::string> seeds;
  for (const std::string& file : files) seeds.push_back(read_file_bytes(file));
  if (target.name == "checkpoint") seeds.push_back(valid_checkpoint());
  return seeds;
}

}  // namespace trainsim::fuzz
