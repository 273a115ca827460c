// `--from FORMAT FILE` (predict, search): a plan imported from a Megatron-LM launch script or
// argument list, a DeepSpeed config or a torchtitan job TOML (interop/plan_import.hpp). The import
// plays the role of --plan: flags given on the command line override it. What the file sets but
// trainsim does not model is printed on stderr, with the file's name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "interop/plan_import.hpp"
#include "model/model_spec.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace trainsim {

struct ModelOptions;

struct ImportOptions {
  std::vector<std::string> from;  // {format, path}
  CLI::Option* option = nullptr;
  void add_to(CLI::App& app);
  bool given() const;
  // The imported job (nullopt without --from). `gpus`: the command line's --gpus, 0 if not given.
  // `model` is re-resolved with the file's sequence length unless --seq-len states one.
  std::optional<ImportedJob> load(const ModelOptions& model_options, ModelSpec& model, int64_t gpus) const;
};

}  // namespace trainsim
