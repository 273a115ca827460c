// `trainsim compare --predicted P --measured M [--tolerance T] [--allow-mismatch] [--format json]`:
// lines up a prediction (predict --format json) and a measurement (run --out) per phase with the
// relative error. Refuses (exit 2) when the two describe different models or plans unless
// --allow-mismatch; exit 3 when |iteration time error| is over the tolerance (default 0.15).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/shared_options.hpp"
#include "reports/comparison.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

Command add_compare_command(CLI::App& root) {
  struct Options {
    std::string predicted_path;
    std::string measured_path;
    double tolerance = kDefaultCompareTolerance;
    bool allow_mismatch = false;
    FormatOption format;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("compare", "predicted vs measured, per phase, with the error");
  app->add_option("--predicted", o->predicted_path, "trainsim.prediction JSON (predict --format json)")->required();
  app->add_option("--measured", o->measured_path, "trainsim.measurement JSON (run --out)")->required();
  app->add_option("--tolerance", o->tolerance, "largest |iteration time error| before exit code 3 (default 0.15)")
      ->check(real_number(0, 1e6, "a fraction: 0.15 = 15%", false));
  app->add_flag("--allow-mismatch", o->allow_mismatch, "compare even when the model or plan of the two files differ");
  o->format.add_to(*app);
  return {app, [o]() {
            const ComparedRun predicted = load_predicted_run(o->predicted_path);
            const ComparedRun measured = load_measured_run(o->measured_path);
            const Comparison c = compare_runs(predicted, measured, o->tolerance);
            if (!o->allow_mismatch) require_same_inputs(c, predicted, measured);
            if (o->format.value() == OutputFormat::kJson) {
              write_json(std::cout, comparison_json(c, predicted, measured, o->allow_mismatch));
            } else {
              std::cout << render_comparison_table(c, predicted, measured);
            }
            if (c.over_tolerance()) {
              const FigureComparison& t = c.iteration_time();
              std::cerr << "compare: iteration time error " << (t.error ? format_percent(*t.error) : std::string("n/a"))
                        << " (predicted " << t.predicted << " s, measured " << t.measured
                        << " s) is over the tolerance of " << format_percent(c.tolerance) << " (--tolerance)\n";
              return 3;
            }
            return 0;
          }};
}

}  // namespace trainsim
