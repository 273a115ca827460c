// Fuzz target: a hardware profile as `--profile FILE` reads it (common/profile_json.hpp load_profile).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "common/profile_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    trainsim::load_profile(trainsim::fuzz::input_file(data, size, ".json"));
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
