// Fuzz target: a `predict --format json` output as compare reads it (reports/compared_run.hpp load_predicted_run).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "reports/compared_run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    trainsim::load_predicted_run(trainsim::fuzz::input_file(data, size, ".json"));
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
