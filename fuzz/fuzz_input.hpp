// What every fuzz target in fuzz/targets/ shares: the fuzzer's bytes as text, or as a file for the
// readers that take a path. The contract each target checks: a reader returns, or throws
// trainsim::InputError; any other exception, a crash or a sanitizer report is a finding
// (fuzz/README.md). Nothing here knows about mutation: the driver or libFuzzer supplies the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainsim::fuzz {

std::string input_text(const uint8_t* data, size_t size);
// Writes the bytes to this process's scratch file `<temp>/trainsim-fuzz-<pid>/input<suffix>` (the
// same path every call, so a run leaves one file) and returns its path.
std::string input_file(const uint8_t* data, size_t size, const std::string& suffix);
// That folder (created on first use); the driver removes it when it is done.
std::string scratch_dir();

}  // namespace trainsim::fuzz
