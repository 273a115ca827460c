// Reading the --from file and reporting what of it was not used (unknown, not modeled, no effect).
#include "cli/import_options.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/shared_options.hpp"
#include "common/errors.hpp"

namespace trainsim {

void ImportOptions::add_to(CLI::App& app) {
  option = app.add_option("--from", from,
                          "import the plan from a launch file: megatron SCRIPT (a launch script or argument list), "
                          "deepspeed CONFIG.json, torchtitan JOB.toml, or nemo CONFIG.yaml (NeMo / Megatron-Bridge); flags given here override it")
               ->expected(2)
               ->type_name("FORMAT FILE");
}

bool ImportOptions::given() const { return option != nullptr && option->count() > 0; }

std::optional<ImportedJob> ImportOptions::load(const ModelOptions& model_options, ModelSpec& model, int64_t gpus) const {
  if (!given()) return std::nullopt;
  const ImportFormat format = parse_import_format(from.at(0));
  const std::string& path = from.at(1);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("--from: " + path + ": cannot open", "check the path");
  std::ostringstream text;
  text << in.rdbuf();
  ImportedJob job = import_job(format, text.str(), path, model, gpus);
  if (job.seq_len > 0) model = model_options.resolve(job.seq_len);
  const std::string who = "from " + path + " (" + to_string(format) + ")";
  for (const std::string& line : import_report(job)) std::cerr << who << ": " << line << "\n";
  for (const std::string& note : job.notes) std::cerr << who << ": " << note << "\n";
  return job;
}

}  // namespace trainsim
