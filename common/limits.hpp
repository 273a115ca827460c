// The largest sizes trainsim accepts, in one place. Each is far beyond anything trained or built
// (so no real input meets it) and low enough that the products trainsim forms from them (bytes,
// FLOPs, tokens per iteration, ranks) stay exact in int64 and finite in double. A value above one
// is a typo or a corrupted file, and is refused with the bound in the message (docs/hardening.md).
#pragma once

#include <cstdint>

namespace trainsim::limits {

// GPUs in one job and any one parallel size (dp, tp, pp, cp, ep, dp_shard): 2^20 = 1,048,576,
// about ten times the largest clusters announced (~100k GPUs).
inline constexpr int64_t kMaxGpus = int64_t{1} << 20;
// GPUs per node: 4,096 (NVL72 racks have 72 GPUs in one NVLink domain; NVL576 plans 576).
inline constexpr int64_t kMaxGpusPerNode = 4096;
// Transformer layers: 2^14 = 16,384 (the deepest published LLMs have 100-200).
inline constexpr int64_t kMaxLayers = int64_t{1} << 14;
// Hidden, FFN and head sizes: 2^20 (the widest published models have hidden 16-32k, FFN ~100k).
inline constexpr int64_t kMaxWidth = int64_t{1} << 20;
// Attention heads and MoE experts: 2^16 = 65,536 (published: 128 heads, 256-384 experts).
inline constexpr int64_t kMaxHeads = int64_t{1} << 16;
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;
inline constexpr int64_t kMaxMtpLayers = 16;  // multi-token-prediction depths (DeepSeek-V3: 1)
// Vocabulary: 2^24 = 16.8M entries (published: up to ~256k).
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;
// Sequence length: 2^26 = 67M tokens (published long-context training: up to 10M).
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 26;
// Sequences per micro-batch or per iteration: 2^24 = 16.8M (Llama 3: 2,048 to 16,384 per iteration).
inline constexpr int64_t kMaxBatch = int64_t{1} << 24;
// Parameters of one model: 10^15 (published: ~2 x 10^12); weights, gradients and optimizer
// states of such a model are ~2e16 bytes, still exact in int64 (9.2e18).
inline constexpr double kMaxParameters = 1e15;

}  // namespace trainsim::limits
