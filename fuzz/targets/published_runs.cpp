// Fuzz target: published runs, schema versions 1 and 2, as `validate --runs` reads them (sim/published_runs.hpp).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "sim/published_runs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    trainsim::load_published_runs(trainsim::fuzz::input_file(data, size, ".json"));
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
