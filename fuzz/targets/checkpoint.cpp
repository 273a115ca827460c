// Fuzz target: a checkpoint file as `run --resume` reads it (runtime/checkpoint.hpp read_checkpoint).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
// A mutated file almost never keeps a valid checksum, and then the reader stops before the header;
// so each input is read twice: as given, and with its last 8 bytes replaced by the FNV-1a checksum
// of the rest, which takes the mutation past the checksum into the header and tensor parsing.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "runtime/checkpoint.hpp"

namespace {

// The checksum runtime/checkpoint.cpp writes: 64-bit FNV-1a with its offset basis as written there
// (1469598103934665603, one digit short of the published 14695981039346656037; only a match matters).
uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t hash = 1469598103934665603ULL;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ULL;
  return hash;
}

void read(const uint8_t* data, size_t size) {
  try {
    trainsim::runtime::read_checkpoint(trainsim::fuzz::input_file(data, size, ".ckpt"));
  } catch (const trainsim::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read(data, size);
  if (size >= sizeof(uint64_t)) {
    std::string fixed(reinterpret_cast<const char*>(data), size);
    const uint64_t sum = fnv1a(data, size - sizeof sum);
    std::memcpy(fixed.data() + size - sizeof sum, &sum, sizeof sum);
    read(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  }
  return 0;
}
