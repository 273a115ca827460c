// `trainsim search --model M --gpu G[,G...] --gpus N|--max-gpus N --global-batch B
//  [--objective time|cost] [--top K] [--train-tokens T --deadline-days D --budget-usd B]
//  [--export megatron|deepspeed|torchrun] [--format json]`: ranks every valid plan.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "common/nearest_name.hpp"
#include "sim/framework_preset.hpp"
#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "plan/plan_export.hpp"
#include "reports/json_output.hpp"
#include "reports/search_report.hpp"
#include "sim/search.hpp"

namespace trainsim {

namespace {

std::vector<int64_t> gpu_counts(int64_t gpus, int64_t max_gpus, int64_t per_node) {
  if (max_gpus <= 0) return {gpus};
  std::vector<int64_t> counts;  // powers of two up to --max-gpus (whole nodes above one node)
  for (int64_t n = 1; n <= max_gpus; n *= 2) {
    if (n >= per_node || per_node % n == 0) counts.push_back(n);
  }
  return counts;
}

void draw_progress(const std::string& label, double fraction) {
  const int width = 30;
  const int filled = static_cast<int>(fraction * width);
  std::fprintf(stderr, "\r%s [%s%s] %3d%%", label.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), ' ').c_str(), static_cast<int>(fraction * 100));
  std::fflush(stderr);
}

}  // namespace

Command add_search_command(CLI::App& root) {
  struct Options {
    ModelOptions model;
    HardwareOptions hardware;
    FormatOption format;
    int64_t gpus = 0, max_gpus = 0, global_batch = 0, top = 10, max_micro_batch = 16, simulate_best = 200;
    std::string objective = "time", precision = "bf16", attention = "flash", export_to, framework;
    bool compiled = false;
    double train_tokens = 0, deadline_days = 0, budget_usd = 0;
    int threads = 0;
    bool tp_across_nodes = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("search", "rank every valid plan for a model on a cluster");
  o->model.add_to(*app);
  o->hardware.add_to(*app);
  o->format.add_to(*app);
  app->add_option("--gpus", o->gpus, "number of GPUs")->check(CLI::PositiveNumber);
  app->add_option("--max-gpus", o->max_gpus, "also every power-of-two GPU count up to this")->check(CLI::PositiveNumber);
  app->add_option("--global-batch", o->global_batch, "sequences per iteration")->required()->check(CLI::PositiveNumber);
  app->add_option("--objective", o->objective, "rank by time or by cost")->check(CLI::IsMember({"time", "cost"}));
  app->add_option("--top", o->top, "plans to show (default 10)")->check(CLI::PositiveNumber);
  app->add_option("--max-micro-batch", o->max_micro_batch, "largest micro-batch tried (default 16)")->check(CLI::PositiveNumber);
  app->add_option("--simulate-best", o->simulate_best, "screened plans re-simulated on the event engine (default 200)")
      ->check(CLI::PositiveNumber);
  app->add_option("--precision", o->precision, "training precision")->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp8"}));
  app->add_option("--attention", o->attention, "attention kernel")->check(CLI::IsMember({"flash", "unfused"}));
  app->add_option("--framework", o->framework,
                  "price attention with this framework's kernel on Hopper (PyTorch SDPA: FlashAttention-2; "
                  "Megatron-Core/TE: cuDNN), and search its selective recomputation and loss (torchtitan: per-op "
                  "checkpointing, PyTorch cross-entropy): " + join_names(framework_preset_names()))
      ->check(CLI::IsMember(framework_preset_names()));
  app->add_flag("--compiled", o->compiled, "with --framework torchtitan: the run uses torch.compile (fused RMSNorm)");
  app->add_flag("--tp-across-nodes", o->tp_across_nodes, "also try tensor parallelism wider than a node");
  app->add_option("--train-tokens", o->train_tokens, "tokens to train: report days and $ for the whole run")
      ->check(CLI::PositiveNumber);
  app->add_option("--deadline-days", o->deadline_days, "drop plans that take longer (needs --train-tokens)")
      ->check(CLI::PositiveNumber);
  app->add_option("--budget-usd", o->budget_usd, "drop plans that cost more (needs --train-tokens)")->check(CLI::PositiveNumber);
  app->add_option("--threads", o->threads, "screening threads (default: all cores)")->check(CLI::PositiveNumber);
  app->add_option("--export", o->export_to, "print the best plan as launch arguments")
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchrun"}));
  return {app, [o]() {
            if (o->gpus <= 0 && o->max_gpus <= 0) {
              throw InputError("search: give --gpus N (one GPU count) or --max-gpus N (every power of two up to N)",
                               "e.g. --gpus 256");
            }
            if ((o->deadline_days > 0 || o->budget_usd > 0) && o->train_tokens <= 0) {
              throw InputError("--deadline-days and --budget-usd need --train-tokens (the run they apply to)");
            }
            const ModelSpec model = o->model.resolve();
            const std::vector<std::string> gpus = o->hardware.gpu_names();
            if (gpus.empty()) throw InputError("missing --gpu or --cluster", "e.g. --gpu h100-sxm-80gb,a100-sxm-80gb");
            SearchOptions options;
            options.objective = o->objective == "cost" ? Objective::kCost : Objective::kTime;
            options.simulate_best = o->simulate_best;
            options.threads = o->threads;
            options.train_tokens = o->train_tokens;
            options.deadline_days = o->deadline_days;
            options.budget_usd = o->budget_usd;
            options.space.global_batch = o->global_batch;
            options.space.max_micro_batch = o->max_micro_batch;
            options.space.tp_across_nodes = o->tp_across_nodes;
            options.space.precision = o->precision == "bf16" ? Precision::kBf16 : o->precision == "fp16" ? Precision::kFp16
                                      : o->precision == "fp32" ? Precision::kFp32 : Precision::kFp8;
            options.space.attention = o->attention == "flash" ? AttentionKernel::kFlash : AttentionKernel::kUnfused;
            if (o->compiled && o->framework.empty()) {
              throw InputError("--compiled says which RMSNorm a framework runs; it needs --framework",
                               "add --framework torchtitan (the preset with an eager default), or leave --compiled out");
            }
            const FrameworkPreset preset = framework_preset(o->framework);
            options.flash2_attention = !o->framework.empty() && preset.flash2_attention_on_hopper;
            if (!o->framework.empty() && preset.per_op_checkpointing) options.space.selective = Recompute::kSelectiveOp;
            if (!o->framework.empty() && preset.pytorch_cross_entropy) options.space.cross_entropy = LossKernel::kPytorch;
            // An uncompiled framework's RMSNorm unless --compiled says the run is compiled.
            if (!o->framework.empty() && preset.eager_unless_compiled && !o->compiled) options.space.norm = NormKernel::kEager;
            const bool show_progress = isatty(STDERR_FILENO) != 0;
            SearchReport report;
            report.model = model;
            report.objective = options.objective;
            report.train_tokens = o->train_tokens;
            for (const std::string& gpu : gpus) {
              const Hardware probe = o->hardware.resolve_gpu(gpu, 1, options.space.precision);
              for (int64_t count : gpu_counts(o->gpus, o->max_gpus, probe.gpus_per_node)) {
                const Hardware hw = o->hardware.resolve_gpu(gpu, count, options.space.precision);
                options.space.gpus = count;
                options.space.gpus_per_node = hw.gpus_per_node;
                const std::string label = gpu + " x " + std::to_string(count);
                const auto started = std::chrono::steady_clock::now();
                if (show_progress) {
                  options.progress = [label, started](double fraction) {
                    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) draw_progress(label, fraction);
                  };
                }
                report.add(hw, search_plans(model, hw, o->hardware.costs(), options));
                if (show_progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) std::fputs("\n", stderr);
              }
            }
            report.finish(static_cast<size_t>(o->top));
            if (o->format.value() == OutputFormat::kJson) {
              write_json(std::cout, report.to_json());
            } else {
              std::cout << report.render();
            }
            if (!o->export_to.empty()) {
              if (report.best.empty()) throw InputError("--export: no plan fits, so there is nothing to export");
              const Prediction& best = report.best.front().prediction;
              std::cout << "\n" << export_plan(&best.model, best.plan, best.hardware.gpus_per_node, parse_export_target(o->export_to));
            }
            return 0;
          }};
}

}  // namespace trainsim
