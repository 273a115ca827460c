// Fuzz target: a `trainsim run` measurement, read by itself and as compare's measured side (reports/measurement_json.hpp, reports/compared_run.hpp).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include <string>

#include "reports/compared_run.hpp"
#include "reports/measurement_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = trainsim::fuzz::input_file(data, size, ".json");
  try {
    trainsim::read_measurement(path);
  } catch (const trainsim::InputError&) {
  }
  try {
    trainsim::load_measured_run(path);
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
