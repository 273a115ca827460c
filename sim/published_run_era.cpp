// The era of a published run: its group's software, its source's date.
#include "sim/published_run_era.hpp"

#include <cctype>
#include <cstdint>

namespace trainsim {

namespace {

// Sources whose software defaulted to Megatron's unfused core attention and reduced gradients
// after the backward: Megatron-LM 2021 (SC'21), Korthikanti et al. 2022, BLOOM's Megatron-DeepSpeed,
// and the Zero Bubble paper (arXiv 2401.10241), built on Megatron-LM of late 2023, whose
// arguments.py had --transformer-impl local by default and --use-flash-attn and
// --overlap-grad-reduce opt-in (sail-sg/zero-bubble-pipeline-parallelism@0e7a7425, 2023-11-14);
// the repository's own ZB script, which passes --use-flash-attn, came in August 2024.
bool predates_fused_attention(const std::string& group) {
  return group == "megatron_sc21_table1" || group == "korthikanti_2022_table5" || group == "bloom" ||
         group == "zero_bubble_pp_a100";
}

// NeMo Megatron 22.x, the NeMo launcher's 2022 runs: its GPT configs
// (NVIDIA/NeMo-Megatron-Launcher@3579cdb3 conf/training/gpt3/*.yaml) have no flash-attention,
// Transformer Engine or userbuffer key: Megatron's core attention, no TP communication overlap.
// Every run from before fused attention predates userbuffers too.
bool predates_userbuffers(const std::string& group) { return group == "nemo_launcher_a100" || predates_fused_attention(group); }

// The first date a run's `source` names (YYYY-MM-DD, YYYY-MM or YYYYMM, not inside a commit hash)
// as YYYYMMDD (day 1 when not given), or 0 when it names none.
int64_t source_date(const std::string& t) {
  const auto alnum = [&](size_t i) { return i < t.size() && std::isalnum(static_cast<unsigned char>(t[i])) != 0; };
  const auto digits = [&](size_t i, size_t n) {
    for (size_t k = i; k < i + n; ++k) {
      if (k >= t.size() || std::isdigit(static_cast<unsigned char>(t[k])) == 0) return false;
    }
    return true;
  };
  const auto number = [&](size_t i, size_t n) { return std::stoll(t.substr(i, n)); };
  for (size_t i = 0; i + 6 <= t.size(); ++i) {
    if ((i > 0 && alnum(i - 1)) || t[i] != '2' || t[i + 1] != '0' || !digits(i, 4)) continue;
    const size_t month_at = i + 4 + (t[i + 4] == '-' ? 1 : 0);
    if (!digits(month_at, 2) || number(month_at, 2) < 1 || number(month_at, 2) > 12) continue;
    size_t end = month_at + 2;
    int64_t day = 1;
    if (end + 2 < t.size() && t[end] == '-' && digits(end + 1, 2) && !alnum(end + 3)) {
      day = number(end + 1, 2);
      end += 3;
    }
    if (alnum(end)) continue;
    return number(i, 4) * 10000 + number(month_at, 2) * 100 + day;
  }
  return 0;
}

// torchtitan split the local batch into as many pipeline micro-batches as pipeline ranks
// (JobConfig experimental.pipeline_parallel_microbatches: "the default value will be the number
// of pipeline stages"; torchtitan@9dec370 parallelisms/pipelining_utils.py) until PR #1073
// (2025-04-07, 5e2033c) made a micro-batch of one sequence the default. A torchtitan run with a
// pipeline that does not state its micro-batch takes the default of the date its source names.
constexpr int64_t kTorchtitanMicrobatchSizeSince = 20250407;

// torchtitan compiles the loss with the model (training.compile, later compile.components "loss")
// since PR #1033 (bbb1b616e, 2025-04-02, torchtitan/components/loss.py build_cross_entropy_loss);
// before it train.py left the loss uncompiled ("compiling loss function causes CUDA errors").
constexpr int64_t kTorchtitanCompiledLossSince = 20250402;

}  // namespace

FrameworkPreset preset_of_era(FrameworkPreset preset, const std::string& group, const std::string& source) {
  const int64_t source_day = source_date(source);
  if (predates_userbuffers(group)) {
    preset.fused_attention = false;
    preset.tp_comm_overlap_with_sp = false;
  }
  if (predates_fused_attention(group)) preset.dp_overlap = false;
  // Megatron-LM's asynchronous TP all-reduce arrived after the SC'21 runs and BLOOM's fork.
  if (group == "megatron_sc21_table1" || group == "bloom") preset.tp_overlap = false;
  if (source_day < kTorchtitanCompiledLossSince) preset.compiled_loss = false;
  if (preset.name == "torchtitan" && source_day > 0 && source_day < kTorchtitanMicrobatchSizeSince) preset.local_batch_over_pp = true;
  return preset;
}

}  // namespace trainsim
