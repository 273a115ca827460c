// `trainsim validate --runs FILE... [--groups G,..] [--fit] [--cross-validate] [--tolerance T]
// [--format json]`: predicts published runs and reports the error per run, per group and per
// half (fit / held out); runs it cannot simulate are listed as unsupported with their reason.
// --fit refits the compute constants on the fit half of the chosen groups (groups weighted
// equally); --cross-validate refits without each group in turn (sim/validation_fit.hpp). Exit
// code 3 when the held-out mean absolute error is over the tolerance.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "common/host_allocator.hpp"
#include "common/nearest_name.hpp"
#include "common/profile_json.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"
#include "reports/validation_report.hpp"
#include "sim/validation_fit.hpp"

namespace trainsim {

namespace {

struct Options {
  std::vector<std::string> runs_paths;
  std::vector<std::string> fit_names;  // --fit-constants (empty: the compute constants)
  std::vector<std::string> groups;
  bool fit = false, cross_validate = false, summary_only = false, allow_extrapolation = false;
  double tolerance = 0.10;
  std::string profile;
  FormatOption format;
};

// What the fits say on stderr as they go: the set (with `fitting`), each round, each group left out.
FitProgress fit_progress(void (*fitting)(const FitSet& set)) {
  FitProgress p{fitting};
  p.round = [](int round, double objective) { std::cerr << "  round " << round + 1 << ": mean over groups of |log error| " << objective << "\n"; };
  p.leaving_out = [](const std::string& group) {
    std::cerr << (group.empty() ? std::string("  fitting on every group") : "  refitting without " + group) << "\n";
  };
  return p;
}

int run_validate(const Options& o) {
  // Thousands of predictions allocate and free the same large event lists: keeping freed memory
  // in the process saves a page fault per page each time (the fits ran ~40% in the kernel).
  keep_freed_memory_in_process();
  const std::vector<PublishedRun> runs = runs_of_groups(load_validation_runs(o.runs_paths), o.groups, o.runs_paths);
  CostModelChoice costs;
  if (!o.profile.empty()) {
    if (o.fit || o.cross_validate) throw InputError("--fit and --cross-validate fit the datasheet model's constants; they do not combine with --profile");
    costs.profile = load_profile(o.profile);
    costs.profile_path = o.profile;
    costs.allow_extrapolation = o.allow_extrapolation;
  }
  if (!o.fit_names.empty() && !o.fit && !o.cross_validate) {
    throw InputError("--fit-constants names the constants a fit moves; nothing is fitted without --fit or --cross-validate",
                     "add --fit (or --cross-validate), or leave --fit-constants out");
  }
  if (o.fit) {
    costs.constants = fit_on_fit_half(runs, costs.constants, o.fit_names, fit_progress([](const FitSet& set) {
      std::cerr << "fitting on " << set.runs.size() << " runs of " << set.groups.size() << " groups (the fit half of each, groups weighted equally)...\n";
    }));
    costs.constants.provenance = "fitted by `trainsim validate --fit` on the fit half of " + join_names(o.runs_paths) +
                                 (o.fit_names.empty() ? "" : " (" + join_names(o.fit_names) + ")");
  }
  const ValidationResult v = validate_runs(runs, costs);
  const auto cross_validating = [](const FitSet& set) { std::cerr << "leave-one-group-out over " << set.groups.size() << " groups:\n"; };
  const std::vector<CrossValidatedGroup> cv =
      o.cross_validate ? leave_one_group_out(runs, costs.constants, o.fit_names, fit_progress(cross_validating)) : std::vector<CrossValidatedGroup>{};
  const ValidationReport report{&v, o.cross_validate ? &cv : nullptr, !o.summary_only, o.runs_paths, o.groups, o.fit_names, o.tolerance, costs.constants};
  if (o.format.value() == OutputFormat::kJson) write_json(std::cout, validation_json(report));
  else std::cout << render_validation(report);
  if (v.held_out_half.count > 0 && v.held_out_half.mean_abs_error > o.tolerance) {
    std::cerr << "validate: held-out mean |error| " << format_percent(v.held_out_half.mean_abs_error) << " is over the tolerance "
              << format_percent(o.tolerance) << "\n";
    return 3;
  }
  return 0;
}

}  // namespace

Command add_validate_command(CLI::App& root) {
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("validate", "predict published runs and report the error");
  app->add_option("--runs", o->runs_paths, "published-run files (trainsim.published_runs, version 1 or 2); groups must not repeat across files")
      ->required();
  app->add_option("--groups", o->groups, "only these groups (comma-separated)")->delimiter(',');
  app->add_flag("--fit", o->fit, "fit the compute constants on the fit half first (groups weighted equally), and print them");
  app->add_option("--fit-constants", o->fit_names, "with --fit / --cross-validate: the constants that move (comma-separated; default the compute constants; "
                  "host_dispatch_s and allocator_reserve_fraction only when named)")
      ->delimiter(',')
      ->check(CLI::IsMember(fittable_constant_names()));
  app->add_flag("--cross-validate", o->cross_validate,
                "leave-one-group-out: refit without each group and report its error (slow: one fit per group)");
  app->add_flag("--summary", o->summary_only, "print the summaries only, not every run");
  app->add_option("--tolerance", o->tolerance, "largest held-out mean |error| before exit code 3 (default 0.10)")
      ->check(real_number(0, 1e6, "a fraction: 0.10 = 10%"));
  app->add_option("--profile", o->profile, "price with a measured profile instead of the datasheet model");
  app->add_flag("--allow-extrapolation", o->allow_extrapolation, "with --profile: price ops outside its measurements");
  o->format.add_to(*app);
  return {app, [o]() { return run_validate(*o); }};
}

}  // namespace trainsim
