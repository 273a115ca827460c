// Fuzz target: a Hugging Face config.json (model/hf_config.hpp read_hf_config), reached as `--model` reaches it.
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
#include <cstddef>
#include <cstdint>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"
#include "model/hf_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json doc = trainsim::parse_json_text(trainsim::fuzz::input_text(data, size), "config.json");
    // resolve_model sends only documents that look like HF configs here; the rest go to our model JSON.
    if (trainsim::is_hf_config(doc)) trainsim::read_hf_config(doc, "config.json");
  } catch (const trainsim::InputError&) {
  }
  return 0;
}
