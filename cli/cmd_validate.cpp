// `trainsim validate --runs FILE... [--groups G,..] [--fit] [--cross-validate] [--tolerance T]
// [--format json]`: predicts published runs and reports the error per run, per group and per
// half (fit / held out); runs it cannot simulate are listed as unsupported with their reason.
// --fit refits the compute constants on the fit half of the chosen groups (groups weighted
// equally); --cross-validate refits without each group in turn. Exit code 3 when the held-out
// mean absolute error is over the tolerance.
#include <iostream>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "common/errors.hpp"
#include "common/nearest_name.hpp"
#include "common/profile_json.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"
#include "reports/validation_report.hpp"
#include "common/host_allocator.hpp"
#include "sim/validation.hpp"

namespace trainsim {

namespace {

struct Options {
  std::vector<std::string> runs_paths;
  std::vector<std::string> fit_names;  // --fit-constants (empty: the compute constants)
  std::vector<std::string> groups;
  bool fit = false;
  bool cross_validate = false;
  bool summary_only = false;
  double tolerance = 0.10;
  std::string profile;
  bool allow_extrapolation = false;
  FormatOption format;
};

// Keeps the runs of the chosen groups; an unknown group name is an input error.
std::vector<PublishedRun> chosen_runs(std::vector<PublishedRun> runs, const Options& o) {
  if (o.groups.empty()) return runs;
  std::vector<std::string> known;
  for (const PublishedRun& r : runs) {
    if (std::find(known.begin(), known.end(), r.group) == known.end()) known.push_back(r.group);
  }
  for (const std::string& g : o.groups) {
    if (std::find(known.begin(), known.end(), g) == known.end()) {
      throw InputError("--groups: no group \"" + g + "\" in " + join_names(o.runs_paths), "groups in the runs files: " + join_names(known));
    }
  }
  std::vector<PublishedRun> kept;
  for (PublishedRun& r : runs) {
    if (std::find(o.groups.begin(), o.groups.end(), r.group) != o.groups.end()) kept.push_back(std::move(r));
  }
  return kept;
}

// The runs of every file, in order; a group may come from one file only (the fit halves and the
// group weights are per group).
std::vector<PublishedRun> load_runs(const std::vector<std::string>& paths) {
  std::vector<PublishedRun> all;
  std::map<std::string, size_t> group_file;  // group -> index of the file it came from
  for (size_t f = 0; f < paths.size(); ++f) {
    const std::string& path = paths[f];
    for (PublishedRun& r : load_published_runs(path)) {
      const auto [it, added] = group_file.emplace(r.group, f);
      if (!added && it->second != f) {
        const std::string& first = paths[it->second];
        throw InputError("--runs: group \"" + r.group + "\" is in both " + first + " and " + path,
                         "give each file once; a group's runs belong to one file");
      }
      all.push_back(std::move(r));
    }
  }
  return all;
}

// --fit: the constants named (or the compute constants) fitted on the fit half, groups weighted equally.
void fit(const std::vector<PublishedRun>& runs, const Options& o, EfficiencyConstants& constants) {
  const FitSet set = fit_set(runs, {}, true);
  if (set.runs.empty()) {
    throw InputError("--fit: no run of the chosen groups can be fitted on (none predicted with a measured throughput in their fit half)",
                     "choose groups with predicted runs (validate --summary lists them), or leave --groups out");
  }
  std::cerr << "fitting on " << set.runs.size() << " runs of " << set.groups.size()
            << " groups (the fit half of each, groups weighted equally)...\n";
  constants = fit_constants(
      set, constants,
      [](int round, double objective) {
        std::cerr << "  round " << round + 1 << ": mean over groups of |log error| " << objective << "\n";
      },
      3, o.fit_names);
  constants.provenance = "fitted by `trainsim validate --fit` on the fit half of " + join_names(o.runs_paths) +
                         (o.fit_names.empty() ? "" : " (" + join_names(o.fit_names) + ")");
}

// --cross-validate: each group predicted with the constants fitted without it.
std::vector<CrossValidatedGroup> leave_one_group_out(const std::vector<PublishedRun>& runs, const Options& o,
                                                     const EfficiencyConstants& constants) {
  const FitSet set = fit_set(runs, {}, false);
  if (set.groups.size() < 2) {
    throw InputError("--cross-validate: " + std::to_string(set.groups.size()) +
                         " group(s) with predicted runs; leaving one out needs at least 2 (one to fit on, one to predict)",
                     "give --groups at least two groups with predicted runs, or leave --groups out");
  }
  std::cerr << "leave-one-group-out over " << set.groups.size() << " groups:\n";
  return cross_validate(
      runs, set, constants,
      [](const std::string& group) {
        std::cerr << (group.empty() ? std::string("  fitting on every group") : "  refitting without " + group) << "\n";
      },
      o.fit_names);
}

int run_validate(const Options& o) {
  // Thousands of predictions allocate and free the same large event lists: keeping freed memory
  // in the process saves a page fault per page each time (the fits ran ~40% in the kernel).
  keep_freed_memory_in_process();
  const std::vector<PublishedRun> runs = chosen_runs(load_runs(o.runs_paths), o);
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
  if (o.fit) fit(runs, o, costs.constants);
  const ValidationResult v = validate_runs(runs, costs);
  const std::vector<CrossValidatedGroup> cv = o.cross_validate ? leave_one_group_out(runs, o, costs.constants)
                                                                 : std::vector<CrossValidatedGroup>{};
  const EfficiencyConstants& constants = costs.constants;
  ValidationReport report{&v, o.cross_validate ? &cv : nullptr, !o.summary_only};
  if (o.format.value() == OutputFormat::kJson) {
    nlohmann::ordered_json inputs = {{"runs_file", o.runs_paths.front()}, {"runs_files", o.runs_paths}, {"groups", o.groups},
                                     {"fit_constants", o.fit_names}, {"tolerance", o.tolerance},
                                     {"constants", constants_json(constants)}};
    nlohmann::ordered_json doc = json_envelope("trainsim.validation", inputs);
    add_validation_json(report, doc);
    write_json(std::cout, doc);
  } else {
    std::cout << render_validation(report);
    std::cout << "\nconstants: " << constants_json(constants).dump() << "\n";
  }
  if (v.held_out_half.count > 0 && v.held_out_half.mean_abs_error > o.tolerance) {
    std::cerr << "validate: held-out mean |error| " << format_percent(v.held_out_half.mean_abs_error)
              << " is over the tolerance " << format_percent(o.tolerance) << "\n";
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
