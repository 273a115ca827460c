// Fuzz target: a PyTorch profiler (Kineto) trace as `trainsim trace FILE` reads it
// (interop/kineto_trace.hpp read_kineto_trace, then interop/kineto_summary.hpp summarize_trace).
// Contract (fuzz/README.md): returns or throws InputError, nothing else.
// Built as a libFuzzer entry point, or renamed by fuzz/CMakeLists.txt for the mutation driver.
// Each input is read twice: as given (plain JSON, or a gzip stream when the bytes are one: zlib
// tells by the magic number), and gzip-compressed here, so mutated JSON also goes through the
// zlib path and mutated gzip bytes reach the stream checks.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/errors.hpp"
#include "fuzz/fuzz_input.hpp"
#include "interop/kineto_summary.hpp"
#include "interop/kineto_trace.hpp"

namespace {

// The bytes as one gzip member (deflate with a gzip header: windowBits 15 + 16).
std::string gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, static_cast<uLong>(size)) + 32, '\0');
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

void read(const uint8_t* data, size_t size, const std::string& suffix) {
  try {
    const trainsim::KinetoTrace t = trainsim::read_kineto_trace(trainsim::fuzz::input_file(data, size, suffix));
    trainsim::summarize_trace(t);
  } catch (const trainsim::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read(data, size, ".json");
  const std::string compressed = gzip(data, size);
  if (!compressed.empty()) read(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size(), ".json.gz");
  return 0;
}
