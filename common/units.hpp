// Units, in one place. GB = 1e9 bytes, GiB = 2^30 bytes (STYLE.md: never mix them).
// Quantities carry their unit in their names (`memory_peak_gib`, `busbw_bytes_per_s`);
// convert only through these helpers.
#pragma once

#include <cstdint>

namespace trainsim {

inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kBytesPerGiB = 1073741824.0;  // 2^30
inline constexpr double kFlopsPerTflop = 1e12;

constexpr double bytes_to_gib(double bytes) { return bytes / kBytesPerGiB; }
constexpr double bytes_to_gb(double bytes) { return bytes / kBytesPerGB; }
constexpr double gib_to_bytes(double gib) { return gib * kBytesPerGiB; }
// Link speeds are quoted in Gbit/s; this gives bytes per second.
constexpr double gbit_per_s_to_bytes_per_s(double gbps) { return gbps * 1e9 / 8.0; }

}  // namespace trainsim
