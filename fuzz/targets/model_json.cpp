// Fuzz target: our model JSON as `--model FILE.json` reads it (model/model_json.hpp load_model_file).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "model/model_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    trainsim::load_model_file(trainsim::fuzz::input_file(data, size, ".json"));
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
