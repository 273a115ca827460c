// `trainsim export PLAN.json --to megatron|deepspeed|torchrun|torchtitan [--model M] [--gpus-per-node N]`.
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "common/limits.hpp"
#include "interop/plan_export.hpp"
#include "model/model_catalog.hpp"
#include "plan/plan_json.hpp"

namespace trainsim {

Command add_export_command(CLI::App& root) {
  struct Options {
    std::string plan_path, to, model;
    int64_t seq_len = 0;
    int64_t gpus_per_node = 8;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("export", "print a plan as Megatron-LM arguments, a DeepSpeed config, a torchrun line or a torchtitan job TOML");
  app->add_option("plan", o->plan_path, "plan JSON (keys as in --plan)")->required();
  app->add_option("--model", o->model, "the model (needed for its Megatron arguments, for interleaving, and for torchtitan)");
  app->add_option("--to", o->to, "megatron, deepspeed, torchrun or torchtitan")
      ->required()
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchrun", "torchtitan"}));
  app->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node for torchrun/srun (default 8)")
      ->transform(whole_number(1, limits::kMaxGpusPerNode, "GPUs"));
  return {app, [o]() {
            const ParallelPlan plan = load_plan_file(o->plan_path);
            std::optional<ModelSpec> model;
            if (!o->model.empty()) {
              model = resolve_model(o->model);
              validate_plan(plan, *model, o->plan_path).throw_if_any("fix the plan first; `trainsim predict --plan` checks it too");
            }
            std::cout << export_plan(model ? &*model : nullptr, plan, o->gpus_per_node, parse_export_target(o->to));
            return 0;
          }};
}

}  // namespace trainsim
