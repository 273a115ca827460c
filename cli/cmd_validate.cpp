// `trainsim validate --runs FILE [--fit] [--tolerance T] [--format json]`: predicts published runs
// and reports the error per run, per group and per half (fit / held out). Exit 3 when the
// held-out mean absolute error is over the tolerance.
#include <cmath>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"
#include "common/errors.hpp"
#include "common/profile_json.hpp"
#include "sim/validation.hpp"

namespace trainsim {

namespace {

nlohmann::ordered_json summary_json(const ErrorSummary& s) {
  return {{"name", s.name}, {"count", s.count}, {"mean_abs_error", s.mean_abs_error}, {"max_abs_error", s.max_abs_error}};
}

nlohmann::ordered_json constants_json(const EfficiencyConstants& c) {
  return {{"gemm_peak_fraction", c.gemm_peak_fraction},
          {"attention_peak_fraction", c.attention_peak_fraction},
          {"memory_bandwidth_fraction", c.memory_bandwidth_fraction},
          {"nvlink_bandwidth_fraction", c.nvlink_bandwidth_fraction},
          {"network_bandwidth_fraction", c.network_bandwidth_fraction},
          {"kernel_overhead_s", c.kernel_overhead_s},
          {"collective_step_intra_s", c.collective_step_intra_s},
          {"collective_step_inter_s", c.collective_step_inter_s},
          {"provenance", c.provenance}};
}

std::string render(const ValidationResult& v) {
  TextTable t({{"run", TextTable::Align::kLeft}, {"half", TextTable::Align::kLeft}, {"measured tok/s/GPU"},
               {"predicted"}, {"error"}, {"fits"}});
  for (const RunResult& r : v.runs) {
    t.add_row({r.run->id, r.in_fit_half ? "fit" : "held-out", format_fixed(r.run->measured_tokens_per_s_per_gpu, 1),
               format_fixed(r.predicted_tokens_per_s_per_gpu, 1), (r.error >= 0 ? "+" : "") + format_percent(r.error),
               r.predicted_fits ? "yes" : "NO"});
  }
  TextTable s({{"summary", TextTable::Align::kLeft}, {"runs"}, {"mean |error|"}, {"max |error|"}});
  for (const ErrorSummary& g : v.groups) {
    s.add_row({g.name, std::to_string(g.count), format_percent(g.mean_abs_error), format_percent(g.max_abs_error)});
  }
  s.add_rule();
  for (const ErrorSummary* g : {&v.fit_half, &v.held_out_half, &v.all}) {
    s.add_row({g->name, std::to_string(g->count), format_percent(g->mean_abs_error), format_percent(g->max_abs_error)});
  }
  return t.render() + "\n" + s.render();
}

}  // namespace

Command add_validate_command(CLI::App& root) {
  struct Options {
    std::string runs_path;
    bool fit = false;
    double tolerance = 0.10;
    std::string profile;
    bool allow_extrapolation = false;
    FormatOption format;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("validate", "predict published runs and report the error");
  app->add_option("--runs", o->runs_path, "published-run file (trainsim.published_runs)")->required();
  app->add_flag("--fit", o->fit, "fit the efficiency constants on the fit half first, and print them");
  app->add_option("--tolerance", o->tolerance, "largest held-out mean |error| before exit code 3 (default 0.10)")
      ->check(CLI::PositiveNumber);
  app->add_option("--profile", o->profile, "price with a measured profile instead of the datasheet model");
  app->add_flag("--allow-extrapolation", o->allow_extrapolation, "with --profile: price ops outside its measurements");
  o->format.add_to(*app);
  return {app, [o]() {
            const std::vector<PublishedRun> runs = load_published_runs(o->runs_path);
            CostModelChoice costs;
            if (!o->profile.empty()) {
              if (o->fit) throw InputError("--fit fits the datasheet model's constants; it does not combine with --profile");
              costs.profile = load_profile(o->profile);
              costs.profile_path = o->profile;
              costs.allow_extrapolation = o->allow_extrapolation;
            }
            EfficiencyConstants& constants = costs.constants;
            if (o->fit) {
              std::cerr << "fitting on " << runs.size() / 2 << " runs (every second run of each group)...\n";
              constants = fit_constants(runs, constants, [](int round, double objective) {
                std::cerr << "  round " << round + 1 << ": mean |log error| on the fit half " << objective << "\n";
              });
              constants.provenance = "fitted by `trainsim validate --fit` on the fit half of " + o->runs_path;
            }
            const ValidationResult v = validate_runs(runs, costs);
            if (o->format.value() == OutputFormat::kJson) {
              nlohmann::ordered_json inputs = {{"runs_file", o->runs_path}, {"tolerance", o->tolerance},
                                               {"constants", constants_json(constants)}};
              nlohmann::ordered_json doc = json_envelope("trainsim.validation", inputs);
              nlohmann::ordered_json list = nlohmann::ordered_json::array();
              for (const RunResult& r : v.runs) {
                list.push_back({{"id", r.run->id},
                                {"group", r.run->group},
                                {"half", r.in_fit_half ? "fit" : "held-out"},
                                {"predicted_tokens_per_s_per_gpu", r.predicted_tokens_per_s_per_gpu},
                                {"measured_tokens_per_s_per_gpu", r.run->measured_tokens_per_s_per_gpu},
                                {"error", r.error},
                                {"predicted_iteration_time_s", r.predicted_iteration_time_s},
                                {"predicted_memory_peak_gib", r.predicted_memory_peak_gib},
                                {"predicted_fits", r.predicted_fits},
                                {"defaults_used", r.run->defaults_used}});
              }
              doc["runs"] = list;
              nlohmann::ordered_json groups = nlohmann::ordered_json::array();
              for (const ErrorSummary& g : v.groups) groups.push_back(summary_json(g));
              doc["summary"] = {{"count", v.all.count},
                                {"mean_abs_error", v.all.mean_abs_error},
                                {"max_abs_error", v.all.max_abs_error},
                                {"fit_half", summary_json(v.fit_half)},
                                {"held_out_half", summary_json(v.held_out_half)},
                                {"groups", groups}};
              write_json(std::cout, doc);
            } else {
              std::cout << render(v);
              std::cout << "\nconstants: " << constants_json(constants).dump() << "\n";
            }
            if (v.held_out_half.mean_abs_error > o->tolerance) {
              std::cerr << "validate: held-out mean |error| " << format_percent(v.held_out_half.mean_abs_error)
                        << " is over the tolerance " << format_percent(o->tolerance) << "\n";
              return 3;
            }
            return 0;
          }};
}

}  // namespace trainsim
