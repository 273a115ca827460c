// Prediction speed: wall time of predict_iteration for plans of growing size (median of repeats),
// and of the event engine alone on the task graph the plan built,
// including the 1T-parameter model on 3072 GPUs (TP8 PP64, 512 micro-batches). Prints a table.
// Run: build/bench_predict
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/host_allocator.hpp"
#include "model/model_catalog.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {

struct Case {
  const char* label;
  const char* model;
  int64_t dp, tp, pp, vpp, micro_batch, global_batch;
  Recompute recompute;
  Schedule schedule = Schedule::k1F1B;  // with vpp 1; interleaved when vpp > 1
  int64_t ep = 1;
  bool sequence_parallel = false;
  int zero_stage = 0;
};

double median_ms(const Case& c, int repeats, size_t* tasks, double* engine_ms) {
  const ModelSpec m = resolve_model(c.model);
  ParallelPlan p;
  p.dp = c.dp;
  p.tp = c.tp;
  p.pp = c.pp;
  p.vpp = c.vpp;
  p.schedule = c.vpp > 1 ? Schedule::kInterleaved : c.schedule;
  p.ep = c.ep;
  p.sequence_parallel = c.sequence_parallel;
  p.micro_batch = c.micro_batch;
  p.global_batch = c.global_batch;
  p.recompute = c.recompute;
  p.zero_stage = c.zero_stage;
  Hardware hw;
  hw.gpu = find_gpu("a100-sxm-80gb");
  hw.gpus = p.gpus();
  const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    SimulationOptions options;
    options.keep_trace = i == 0;
    const Prediction r = predict_iteration(m, p, hw, cost, options);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (i == 0) {
      *tasks = r.trace.graph.tasks().size();
      std::vector<double> engine;  // the event engine alone, on the graph this plan built
      for (int k = 0; k < repeats; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::vector<TaskTiming> timing = simulate(r.trace.graph);
        engine.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(engine.begin(), engine.end());
      *engine_ms = engine[engine.size() / 2];
    }
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  keep_freed_memory_in_process();  // as search and validate run (common/host_allocator.hpp)
  const Case cases[] = {
      {"GPT-3 175B, 1024 GPUs, TP8 PP8, m=96", "gpt3-175b", 16, 8, 8, 1, 1, 1536, Recompute::kNone},
      {"GPT-3 175B, 64 GPUs, TP8 PP8 v3, m=64", "gpt3-175b", 1, 8, 8, 3, 1, 64, Recompute::kSelective},
      {"Megatron 530B, 2520 GPUs, TP8 PP35, m=280", "megatron-529.6b", 9, 8, 35, 1, 1, 2520, Recompute::kFull},
      {"Megatron 1T, 3072 GPUs, TP8 PP64, m=512", "megatron-1t", 6, 8, 64, 1, 1, 3072, Recompute::kFull},
      {"Llama-3 8B, 256 GPUs, DP256, m=4", "llama3-8b", 256, 1, 1, 1, 1, 1024, Recompute::kNone},
      {"GPT-3 175B, 512 GPUs, TP8 PP32 ZB-2p, m=256", "gpt3-175b", 2, 8, 32, 1, 1, 512, Recompute::kNone,
       Schedule::kZeroBubble2p},
      {"Qwen3-235B-A22B, 256 GPUs, TP2 PP8 v4 EP32, m=128", "qwen3-235b-a22b", 16, 2, 8, 4, 1, 2048, Recompute::kNone,
       Schedule::k1F1B, 32, true},
      {"Llama-3 8B, 256 GPUs, FSDP256 (ZeRO-3), m=4", "llama3-8b", 256, 1, 1, 1, 1, 1024, Recompute::kNone, Schedule::k1F1B, 1,
       false, 3},
      {"Llama-3 70B, 512 GPUs, FSDP8 TP8 PP8 (ZeRO-3), m=64", "llama3-70b", 8, 8, 8, 1, 1, 512, Recompute::kNone, Schedule::k1F1B,
       1, true, 3},
      // The deep pipelines `search --uneven-pipeline` simulates for 405B's 126 layers (+ embedding and loss).
      {"Llama-3.1 405B, 512 GPUs, TP4 PP128, m=1024", "llama3-405b", 1, 4, 128, 1, 1, 1024, Recompute::kNone},
      {"Llama-3.1 405B, 512 GPUs, TP4 PP32 v4 DP4, m=256", "llama3-405b", 4, 4, 32, 4, 1, 1024, Recompute::kNone},
  };
  std::printf("%-52s %10s %12s %12s\n", "plan", "tasks", "median ms", "engine ms");
  for (const Case& c : cases) {
    size_t tasks = 0;
    double engine_ms = 0;
    const double ms = median_ms(c, 9, &tasks, &engine_ms);
    std::printf("%-52s %10zu %12.2f %12.2f\n", c.label, tasks, ms, engine_ms);
  }
  return 0;
}
