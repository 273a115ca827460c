// Scratch files for the fuzz targets whose readers take a path.
#include "fuzz/fuzz_input.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trainsim::fuzz {

std::string input_text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

std::string scratch_dir() {
  static const std::string dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("trainsim-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

std::string input_file(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path = scratch_dir() + "/input" + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace trainsim::fuzz
