// trainsim_fuzz: the deterministic mutation driver. For each fuzz target it replays the seeds,
// then every file of fuzz/regressions/<target>/, then a fixed number of seeded mutations of the
// seeds, and reports the inputs run and the findings: any exception other than InputError (saved
// to --crash-dir and counted; exit 1). A crash, a sanitizer report or a hang ends the process (or
// ctest's timeout does): each input is written to --crash-dir/last-input.bin before it runs, so the
// one that ended it is there to replay. It does not look for new coverage (libFuzzer does that).
//   trainsim_fuzz --root SRC [--iterations N] [--seed S] [--target NAME]... [--crash-dir DIR]
//   trainsim_fuzz --root SRC --target NAME --replay FILE      (one input, e.g. a saved finding)
#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "fuzz/fuzz_targets.hpp"
#include "fuzz/mutations.hpp"

namespace fs = std::filesystem;
using trainsim::fuzz::FuzzTarget;

namespace {

struct Options {
  std::string root, crash_dir = (fs::temp_directory_path() / "trainsim-fuzz-findings").string(), replay;
  std::vector<std::string> targets;
  long long iterations = 1000;
  unsigned long long seed = 1;
  size_t max_bytes = 1 << 16;
};

std::string g_crash_dir;

std::string save_input(const std::string& name, const std::string& input) {
  const std::string path = g_crash_dir + "/" + name + ".bin";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << input;
  return path;
}

std::string exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "unknown";
  int status = 0;
  char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string result = status == 0 ? name : type->name();
  std::free(name);
  return result;
}

struct TargetResult {
  long long inputs = 0, findings = 0;
  double slowest_s = 0;
};

// Runs one input; a finding is printed, saved and counted.
void run_input(const FuzzTarget& target, const std::string& input, const std::string& label, TargetResult& result) {
  save_input("last-input", input);  // what a crash leaves behind (removed at the end)
  const auto start = std::chrono::steady_clock::now();
  std::string finding;
  try {
    target.run(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  } catch (const std::exception& e) {
    finding = exception_type() + ": " + e.what();
  } catch (...) {
    finding = exception_type();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.slowest_s = std::max(result.slowest_s, seconds);
  ++result.inputs;
  if (finding.empty()) return;
  ++result.findings;
  if (finding.size() > 400) finding = finding.substr(0, 400) + "...";
  std::printf("fuzz: finding: %s %s: %s\n  input saved: %s\n", target.name.c_str(), label.c_str(), finding.c_str(),
              save_input(target.name + "-" + label, input).c_str());
}

std::vector<std::string> regression_files(const Options& options, const FuzzTarget& target) {
  std::vector<std::string> files;
  const fs::path dir = fs::path(options.root) / "fuzz" / "regressions" / target.name;
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TargetResult fuzz_target(const Options& options, const FuzzTarget& target) {
  TargetResult result;
  const std::vector<std::string> seeds = trainsim::fuzz::load_seeds(target, options.root);
  const std::vector<std::string> regressions = regression_files(options, target);
  for (size_t i = 0; i < seeds.size(); ++i) run_input(target, seeds[i], "seed" + std::to_string(i), result);
  for (const std::string& file : regressions) {
    run_input(target, trainsim::fuzz::read_file_bytes(file), "regression-" + fs::path(file).filename().string(), result);
  }
  // One generator per target, so a target's inputs do not depend on which other targets run.
  uint64_t stream = options.seed;  // FNV-1a of the name into the seed (std::hash differs between libraries)
  for (const char c : target.name) stream = (stream ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  trainsim::fuzz::Random random(stream);
  for (long long i = 0; i < options.iterations && !seeds.empty(); ++i) {
    const std::string input = trainsim::fuzz::mutate(seeds[random.below(seeds.size())], seeds, random, options.max_bytes);
    run_input(target, input, "iteration" + std::to_string(i), result);
  }
  std::printf("fuzz: %-17s %3zu seeds, %2zu regressions, %6lld mutated inputs: %lld finding(s); slowest input %.3f s\n",
              target.name.c_str(), seeds.size(), regressions.size(), seeds.empty() ? 0 : options.iterations, result.findings,
              result.slowest_s);
  std::fflush(stdout);
  return result;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--root") o.root = value;
    else if (flag == "--iterations") o.iterations = std::stoll(value);
    else if (flag == "--seed") o.seed = std::stoull(value);
    else if (flag == "--target") o.targets.push_back(value);
    else if (flag == "--crash-dir") o.crash_dir = value;
    else if (flag == "--replay") o.replay = value;
    else if (flag == "--max-bytes") o.max_bytes = std::stoull(value);
    else throw std::invalid_argument("unknown option " + flag);
  }
  if (argc % 2 == 0 || o.root.empty()) throw std::invalid_argument("usage: trainsim_fuzz --root SRC [--iterations N] ...");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  g_crash_dir = options.crash_dir;
  fs::create_directories(g_crash_dir);
  std::printf("fuzz: a crash leaves its input in %s/last-input.bin (replay: --target NAME --replay FILE)\n", g_crash_dir.c_str());
  const auto start = std::chrono::steady_clock::now();
  long long inputs = 0, findings = 0;
  for (const FuzzTarget& target : trainsim::fuzz::fuzz_targets()) {
    if (!options.targets.empty() && std::find(options.targets.begin(), options.targets.end(), target.name) == options.targets.end()) continue;
    TargetResult result;
    if (!options.replay.empty()) run_input(target, trainsim::fuzz::read_file_bytes(options.replay), "replay", result);
    else result = fuzz_target(options, target);
    inputs += result.inputs;
    findings += result.findings;
  }
  fs::remove_all(trainsim::fuzz::scratch_dir());
  fs::remove(g_crash_dir + "/last-input.bin");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz: %lld inputs in %.1f s (seed %llu), %lld finding(s)\n", inputs, seconds, options.seed, findings);
  return findings == 0 ? 0 : 1;
}
