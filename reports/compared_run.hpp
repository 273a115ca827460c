// One side of `trainsim compare`, read from its file: a `trainsim.prediction` (predict --format
// json) or a `trainsim.measurement` (run --out). Keeps only what compare needs: the per-phase
// figures in predict's vocabulary and the identity of the run (inputs.model and inputs.plan,
// flattened). Strict about those keys and their types; other keys are ignored (machine-written).
#pragma once

#include <map>
#include <string>

#include "common/measurement.hpp"
#include "common/phase_breakdown.hpp"

namespace trainsim {

// The figures both files carry: the iteration, its breakdown (predict's keys), the memory peak.
struct IterationFigures {
  double iteration_time_s = 0;
  PhaseBreakdown phases;
  double memory_peak_gib = 0;
};

// inputs.model and inputs.plan flattened to JSON pointer -> compact JSON value
// ("/inputs/plan/tp" -> "2", "/inputs/model/ffn_kind" -> "\"gelu\""). The model's "source" (a
// description of where the numbers came from) is left out: it does not change the run.
using RunIdentity = std::map<std::string, std::string>;

struct ComparedRun {
  std::string path;
  std::string model_name;
  IterationFigures figures;
  RunIdentity identity;
  bool identity_stated = true;  // false: a profiler-trace measurement that names no model or plan
  std::string note;  // a line for the reader ("does not fit: ...", "5 timed iterations on 2 ranks")
  std::vector<OpCategoryTimes> op_categories;  // per pipeline stage; empty when the file has none
  // Checkpoint save and load seconds: predict's goodput.checkpoint, run's checkpoint block (0: none).
  double checkpoint_save_s = 0, checkpoint_load_s = 0;
};

// The measurement in predict's vocabulary: compute = forward + backward.
IterationFigures measured_figures(const Measurement& measurement);

// Throw InputError naming the file and every missing or mistyped key (a wrong schema at once).
ComparedRun load_predicted_run(const std::string& path);
ComparedRun load_measured_run(const std::string& path);

}  // namespace trainsim
