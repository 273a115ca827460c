// Fuzz target: a torchtitan job TOML as `--from torchtitan` reads it (interop/plan_import.hpp).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "interop/plan_import.hpp"
#include "model/model_catalog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const trainsim::ModelSpec model = trainsim::resolve_model("llama3-8b");
  const std::string text = trainsim::fuzz::input_text(data, size);
  // gpus 0: the file's own world size decides, as when --gpus is not given.
  try {
    trainsim::import_job(trainsim::ImportFormat::kTorchtitan, text, "job.toml", model, 0);
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
