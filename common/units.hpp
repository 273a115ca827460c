// Units, in one place. GB = 1e9 bytes, GiB = 2^30 bytes (STYLE.md: never mix them).
// Quantities carry their unit in their names (`memory_peak_gib`, `busbw_bytes_per_s`);
// convert only through these helpers.
#pragma once

#include <cstdint>

namespace trainsim {

inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kBytesPerGiB = 1073741824.0;  // 2^30
inline constexpr double kBytesPerMiB = 1048576.0;     // 2^20
inline constexpr double kFlopsPerTflop = 1e12;

constexpr double bytes_to_gib(double bytes) { return bytes / kBytesPerGiB; }
constexpr double bytes_to_gb(double bytes) { return bytes / kBytesPerGB; }
constexpr double gib_to_bytes(double gib) { return gib * kBytesPerGiB; }
constexpr double mib_to_bytes(double mib) { return mib * kBytesPerMiB; }
constexpr double bytes_to_mib(double bytes) { return bytes / kBytesPerMiB; }
// Datasheet rates: TFLOP/s (1e12 FLOP/s) and GB/s (1e9 bytes/s).
constexpr double tflops_to_flops_per_s(double tflops) { return tflops * kFlopsPerTflop; }
constexpr double flops_per_s_to_tflops(double flops_per_s) { return flops_per_s / kFlopsPerTflop; }
constexpr double gb_per_s_to_bytes_per_s(double gb_per_s) { return gb_per_s * kBytesPerGB; }
constexpr double bytes_per_s_to_gb_per_s(double bytes_per_s) { return bytes_per_s / kBytesPerGB; }
constexpr double bytes_per_s_to_tb_per_s(double bytes_per_s) { return bytes_per_s / (1000.0 * kBytesPerGB); }
// Link speeds are quoted in Gbit/s; this gives bytes per second.
constexpr double gbit_per_s_to_bytes_per_s(double gbps) { return gbps * 1e9 / 8.0; }

}  // namespace trainsim
