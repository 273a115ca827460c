// Collective cost model against measured curves inside one node: the datasheet model's time for
// each all-reduce / all-gather / reduce-scatter point of shared/reference (XLA's 8 x H100 tables,
// nccl-tests on 8 x H100 single process) and of vTrain's 2-8 x A100 nccl-tests tables, and the
// mean error per source and size band. Prints a table; docs/cost-model.md quotes it. With the third
// file, the rccl-tests all-reduce sweep on 8 MI300X (microbench-moe-blackwell-amd.json) on the
// full-mesh model, on lines of its own (the summary lines stay the NVIDIA and A100 points).
// Run: build/bench_collectives ../shared/reference/microbench.json ../shared/reference/a100-allreduce-vtrain \
//        [../shared/reference/microbench-moe-blackwell-amd.json]
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/json_reader.hpp"
#include "sim/cost_model.hpp"

using namespace trainsim;

namespace {

struct Point {
  std::string source;
  CollectiveKind kind;
  int64_t ranks;
  double bytes, measured_s;
  std::string gpu;  // catalog name the model prices it on
  bool in_summary = true;  // counted in the closing all-points lines
};

void add_reference(const std::string& path, std::vector<Point>& points) {
  const nlohmann::json doc = load_json_file(path);
  for (const auto& m : doc.at("measurements")) {
    if (m.value("topic", "") != "collective" || m.value("unit", "") != "us") continue;
    const std::string what = m.value("what", ""), gpu = m.value("gpu", "");
    const auto& c = m.at("config");
    if (gpu.rfind("H100 (XLA", 0) == 0 && what.find("single node, group of") != std::string::npos) {
      const CollectiveKind kind = what.rfind("all-reduce", 0) == 0 ? CollectiveKind::kAllReduce
                                  : what.rfind("all-gather", 0) == 0 ? CollectiveKind::kAllGather
                                  : what.rfind("reduce-scatter", 0) == 0 ? CollectiveKind::kReduceScatter
                                                                          : CollectiveKind::kSendRecv;
      if (kind == CollectiveKind::kSendRecv) continue;
      points.push_back({"8xH100 XLA " + what.substr(0, what.find(' ')), kind, c.at("group_size").get<int64_t>(),
                        c.at("bytes").get<double>(), m.at("value").get<double>() * 1e-6, "h100-sxm-80gb"});
    } else if (what.find("all_reduce_perf, 1 node 8 GPUs") != std::string::npos) {
      points.push_back({"8xH100 nccl-tests all-reduce", CollectiveKind::kAllReduce, 8, c.at("bytes").get<double>(),
                        m.at("value").get<double>() * 1e-6, "h100-sxm-80gb"});
    }
  }
}

// vTrain's tables: size (B), count, type, time (ns), busbw, time (ns), busbw: the first time.
void add_vtrain(const std::string& dir, std::vector<Point>& points) {
  for (int n = 2; n <= 8; ++n) {
    std::ifstream in(dir + "/allreduce_" + std::to_string(n) + "gpu.csv");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream row(line);
      for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
      if (cells.size() < 4) continue;
      const double bytes = std::stod(cells[0]);
      if (std::fmod(std::log2(bytes), 1.0) != 0.0) continue;  // powers of two, as the other tables
      points.push_back({"2-8xA100 vTrain all-reduce", CollectiveKind::kAllReduce, n, bytes,
                        std::stod(cells[3]) * 1e-9, "a100-sxm-80gb"});
    }
  }
}

// rccl-tests all_reduce on one 8-GPU MI300X board, launched without HIP graphs: bytes and time.
void add_rccl(const std::string& path, std::vector<Point>& points) {
  const nlohmann::json doc = load_json_file(path);
  for (const auto& m : doc.at("measurements")) {
    if (m.value("topic", "") != "collective" || m.value("gpu", "") != "MI300X") continue;
    if (m.value("what", "").rfind("rccl-tests all_reduce", 0) != 0) continue;
    const auto& c = m.at("config");
    if (!c.contains("time_us") || !c.contains("bytes") || c.value("hip_graph", true) || c.value("gpus", 0) != 8) continue;
    points.push_back({"8xMI300X rccl-tests all-reduce", CollectiveKind::kAllReduce, 8, c.at("bytes").get<double>(),
                      c.at("time_us").get<double>() * 1e-6, "mi300x-oam-192gb", false});
  }
}

const char* band(double bytes) { return bytes < 1048576 ? "< 1 MiB" : bytes <= 16 * 1048576.0 ? "1-16 MiB" : "> 16 MiB"; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: bench_collectives MICROBENCH_JSON VTRAIN_TABLE_DIR [MICROBENCH_MOE_BLACKWELL_AMD_JSON]\n");
    return 2;
  }
  std::vector<Point> points;
  add_reference(argv[1], points);
  add_vtrain(argv[2], points);
  if (argc == 4) add_rccl(argv[3], points);
  struct Sum {
    int n = 0;
    double error = 0, abs_error = 0;
  };
  std::map<std::pair<std::string, std::string>, Sum> sums;
  Sum all, large;
  for (const Point& p : points) {
    Hardware hw;
    hw.gpu = find_gpu(p.gpu);
    hw.gpus = 8;
    hw.gpus_per_node = 8;
    const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
    const double e = cost.collective_s(p.kind, p.bytes, GroupScope{p.ranks, p.ranks, 1}) / p.measured_s - 1.0;
    for (Sum* s : {&sums[{p.source, band(p.bytes)}], p.in_summary ? &all : nullptr,
                   p.in_summary && p.bytes >= 1048576 ? &large : nullptr}) {
      if (s == nullptr) continue;
      ++s->n;
      s->error += e;
      s->abs_error += std::fabs(e);
    }
  }
  std::printf("%-30s %-9s %6s %9s %9s\n", "source", "size", "points", "mean", "mean |e|");
  for (const auto& [key, s] : sums) {
    std::printf("%-30s %-9s %6d %+8.0f%% %8.0f%%\n", key.first.c_str(), key.second.c_str(), s.n, 100 * s.error / s.n,
                100 * s.abs_error / s.n);
  }
  std::printf("all %d NVIDIA and A100 points: mean |error| %.0f%%; %d points of 1 MiB and more: %.0f%%\n", all.n,
              100 * all.abs_error / all.n, large.n, 100 * large.abs_error / large.n);
  return 0;
}
