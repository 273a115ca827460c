// `trainsim search --model M --gpu G[,G...] --gpus N|--max-gpus N --global-batch B
//  [--objective time|cost|effective-time|effective-cost] [--top K] [--train-tokens T --deadline-days D
//  --budget-usd B] [goodput options: cli/goodput_options.hpp]
//  [--export megatron|deepspeed|torchrun|torchtitan] [--from FORMAT FILE] [--format json]`: ranks every
//  valid plan; with --from, also simulates the imported plan to set it beside the best.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <algorithm>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/search_options.hpp"
#include "common/errors.hpp"
#include "common/host_allocator.hpp"
#include "interop/plan_export.hpp"
#include "reports/json_output.hpp"
#include "reports/search_report.hpp"

namespace trainsim {

namespace {

void draw_progress(const std::string& label, double fraction) {
  const int width = 30;
  const int filled = static_cast<int>(fraction * width);
  std::fprintf(stderr, "\r%s [%s%s] %3d%%", label.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), ' ').c_str(), static_cast<int>(fraction * 100));
  std::fflush(stderr);
}

// One search of run_searches: a GPU type at a count and a precision.
struct SearchJob {
  Hardware hw;
  Precision precision = Precision::kBf16;
  SearchOptions options;
  ScreenedSearch screened;
};

// Every precision x GPU type x count asked for, each a search added to `report`; with several
// precisions a GPU without a tensor-core peak for one is skipped for it, and said so. All are
// screened first, then simulated from the most promising screen down, each knowing the best
// plans the ones before found (SearchOptions::rank_ceiling) and the best of its GPU type
// (SearchOptions::gpu_type_best), so a search that cannot reach the table simulates only as far
// as its own best, and none at all when another precision or count of its GPU type beat it.
void run_searches(const SearchCommandOptions& o, const ModelSpec& model, SearchOptions options, SearchReport& report) {
  const std::vector<std::string> gpus = o.hardware.gpu_names();
  if (gpus.empty()) throw InputError("missing --gpu or --cluster", "e.g. --gpu h100-sxm-80gb,a100-sxm-80gb");
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  const std::vector<Precision> searched = searched_precisions(o.request);
  std::vector<SearchJob> jobs;
  for (const Precision precision : searched) {
    options.space.precision = precision;
    for (const std::string& gpu : gpus) {
      if (searched.size() > 1 && o.hardware.resolve_gpu(gpu, 1, Precision::kBf16).gpu.peak_flops_per_s(precision) <= 0) {
        report.skipped.push_back(gpu + ": " + to_string(precision) + " not searched (no tensor-core peak for it)");
        continue;
      }
      const Hardware probe = o.hardware.resolve_gpu(gpu, 1, precision);
      for (int64_t count : searched_gpu_counts(o.request.gpus, o.request.max_gpus, probe.gpus_per_node)) {
        const Hardware hw = o.hardware.resolve_gpu(gpu, count, precision);
        options.space.gpus = count;
        options.space.gpus_per_node = hw.gpus_per_node;
        const std::string label = gpu + " x " + std::to_string(count) + (searched.size() > 1 ? std::string(" ") + to_string(precision) : "");
        const auto started = std::chrono::steady_clock::now();
        if (show_progress) {
          options.progress = [label, started](double fraction) {
            if (std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) draw_progress(label, fraction);
          };
        }
        for (const std::string& why : zero_bubble_not_searched(model, options.space)) report.skipped.push_back(label + ": " + why);
        if (const std::string why = uneven_pipelines_not_searched(model, options.space); !why.empty()) report.skipped.push_back(label + ": " + why);
        jobs.push_back({hw, precision, options, screen_search(model, hw, o.hardware.costs(), options)});
        if (show_progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) std::fputs("\n", stderr);
      }
    }
  }
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return jobs[a].screened.best_score() < jobs[b].screened.best_score(); });
  std::vector<SearchResult> results(jobs.size());
  std::vector<const SearchResult*> done;
  for (size_t i : order) {
    SearchJob& job = jobs[i];
    job.options.rank_ceiling = rank_ceiling_after(done, job.options);
    job.options.gpu_type_best = gpu_type_best_after(done, job.hw.gpu.name, job.options);
    // The screen's largest overestimate any earlier search met widens this one's margin too.
    for (const SearchResult* r : done) {
      if (job.options.screen_margin >= 0) job.options.screen_margin = std::max(job.options.screen_margin, r->screen_overestimate);
    }
    results[i] = simulate_screened(model, job.hw, o.hardware.costs(), job.options, std::move(job.screened));
    done.push_back(&results[i]);
  }
  for (size_t i = 0; i < jobs.size(); ++i) report.add(jobs[i].hw, jobs[i].precision, std::move(results[i]));
}

}  // namespace

Command add_search_command(CLI::App& root) {
  auto o = std::make_shared<SearchCommandOptions>();
  CLI::App* app = root.add_subcommand("search", "rank every valid plan for a model on a cluster");
  o->add_to(*app);
  auto save_plan = std::make_shared<SavePlanOptions>();  // --save-plan, --save-plan-rank (cli/shared_options.hpp)
  save_plan->add_to(*app, true);
  return {app, [o, save_plan]() {
            // Each simulation allocates and frees a task graph of up to tens of MB (Llama 3.1 405B
            // at PP 128 with 1,024 micro-batches: 522k tasks); kept in the process, the next plan
            // reuses its pages (the page faults were a fifth of a deep search).
            keep_freed_memory_in_process();
            ModelSpec model = o->model.resolve();
            const std::optional<ImportedJob> job = o->from.load(o->model, model, o->request.gpus);
            if (job) o->take_from_import(*job);
            if (o->given("global-batch-tokens")) {
              o->request.global_batch = batch_of_tokens(std::stoll(o->global_batch_tokens), model.seq_len);
            }
            SearchRequest request = o->parsed();
            if (job) request.from_format = o->from.from.front();
            request.export_target = o->export_to;
            SearchOptions options = search_options_for(request);
            options.keep_best = o->top;
            if (is_effective(options.objective) || o->goodput.wanted(request.train_tokens, o->hardware.costs())) {
              options.goodput = o->goodput.resolve(request.train_tokens, o->hardware.costs());
            }
            set_space_choices(request, model, options.space);
            SearchReport report{model, options.objective, request.train_tokens, options.goodput};
            report.restrictions = framework_restrictions(request);
            report.deadline_days = request.deadline_days;
            report.global_batch = request.global_batch;
            report.budget_usd = request.budget_usd;
            run_searches(*o, model, options, report);
            report.finish(static_cast<size_t>(o->top));
            if (job) {
              const auto hardware = [&](int64_t gpus, Precision p) { return o->hardware.resolve_gpu(o->hardware.gpu_names().front(), gpus, p); };
              report.imported_file = job->file;
              report.imported = simulate_imported_plan(request, model, job->plan, job->file, hardware, o->hardware.costs(), options.flash2_attention);
            }
            if (o->format.value() == OutputFormat::kJson) write_json(std::cout, report.to_json());
            else std::cout << report.render();
            save_plan->write_best(report.best);
            if (!o->export_to.empty()) {
              if (report.best.empty()) throw InputError("--export: no plan fits, so there is nothing to export");
              const Prediction& best = report.best.front().prediction;
              std::cout << "\n" << export_plan(&best.model, best.plan, best.hardware.gpus_per_node, parse_export_target(o->export_to));
            }
            return 0;
          }};
}

}  // namespace trainsim
