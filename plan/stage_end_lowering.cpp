// The ops beside a pipeline stage's transformer layers: the first stage's embedding, the last
// stage's final norm, LM head and loss, and each multi-token-prediction depth's own (Megatron-Core's
// pre- and post-process: LanguageModelEmbedding, the output layer and the vocabulary-parallel
// cross-entropy, multi_token_prediction.py). plan/lowering.cpp places them on their stages.
#include "plan/lowering_ops.hpp"

namespace trainsim::lowering {

// The first stage's embedding lookup (+ positions, dropout) and its gradient scatter.
void add_embedding_ops(StageWork& w, const ParallelPlan& p, const Shapes& s) {
  const double full_act = static_cast<double>(s.tokens) * static_cast<double>(s.h) * s.e;
  // Vocabulary-parallel embeddings all-reduce their output.
  w.embedding_forward.push_back(memory("embedding", 3 * full_act));
  if (p.tp > 1) {
    w.embedding_forward.push_back(collective(p.sequence_parallel ? "embedding_reducescatter" : "embedding_allreduce",
                                         p.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                                         GroupKind::kTp, full_act));
  }
  // With SP the backward of the embedding's reduce-scatter all-gathers the token rows: every
  // vocabulary shard scatters every token's gradient.
  if (p.tp > 1 && p.sequence_parallel) {
    w.embedding_backward.push_back(collective("embedding_allgather_bwd", CollectiveKind::kAllGather, GroupKind::kTp, full_act));
  }
  if (p.lora_rank <= 0) w.embedding_backward.push_back(memory("embedding_bwd", 3 * full_act));  // LoRA: frozen
}

// The final norm, LM head and loss, forward and backward.
void add_head_ops(StageWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  const double act = s.sp_tokens * static_cast<double>(s.h) * s.e;
  const double full_act = static_cast<double>(s.tokens) * static_cast<double>(s.h) * s.e;
  const double logits = static_cast<double>(s.tokens) * static_cast<double>(m.vocab / p.tp) * 4.0;  // fp32
  w.head_forward.push_back(memory("final_norm", 2 * act * norm_traffic(m, p).forward));
  if (p.sequence_parallel) w.head_forward.push_back(collective("head_allgather", CollectiveKind::kAllGather, GroupKind::kTp, full_act));
  w.head_forward.push_back(gemm("lm_head", s.tokens, m.vocab / p.tp, s.h));
  w.head_forward.push_back(memory("cross_entropy", 3 * logits));
  if (p.tp > 1) {
    // Megatron-LM's vocabulary-parallel cross-entropy all-reduces, per token, the row max, the
    // target logit and the sum of exponentials (three fp32 all-reduces).
    const double per_token = static_cast<double>(s.tokens) * 4.0;
    for (int i = 0; i < 3; ++i) {
      w.head_forward.push_back(collective("head_loss_allreduce", CollectiveKind::kAllReduce, GroupKind::kTp, per_token));
    }
  }
  w.head_backward.push_back(memory("cross_entropy_bwd", 2 * logits));
  w.head_backward.push_back(gemm("lm_head_dgrad", s.tokens, s.h, m.vocab / p.tp));
  if (p.lora_rank <= 0) w.head_backward.push_back(gemm("lm_head_wgrad", s.h, m.vocab / p.tp, s.tokens));  // LoRA: frozen
  if (p.tp > 1) {
    w.head_backward.push_back(collective(p.sequence_parallel ? "head_reducescatter" : "head_allreduce",
                                          p.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                                          GroupKind::kTp, full_act));
  }
  w.head_backward.push_back(memory("final_norm_bwd", 3 * act * norm_traffic(m, p).backward));
}

// One multi-token-prediction depth beside its transformer layer (counted in the last chunk's
// layers): the shifted tokens' embedding, enorm and hnorm, the 2h concatenation through eh_proj
// (column-parallel 2h -> h: its input gathered with SP, its output gathered back), then its own
// final norm, the shared LM head and a second loss (Megatron-Core multi_token_prediction.py).
void add_mtp_ops(StageWork& w, const ModelSpec& m, const ParallelPlan& p, const Shapes& s) {
  const double act = s.sp_tokens * static_cast<double>(s.h) * s.e;
  const double full_act = static_cast<double>(s.tokens) * static_cast<double>(s.h) * s.e;
  w.head_forward.push_back(memory("mtp_embedding", 3 * full_act));
  w.head_forward.push_back(memory("mtp_norms", 2 * 2 * act * norm_traffic(m, p).forward));
  w.head_forward.push_back(memory("mtp_concat", 4 * act));
  if (p.sequence_parallel && p.tp > 1) {
    w.head_forward.push_back(collective("mtp_allgather", CollectiveKind::kAllGather, GroupKind::kTp, 2 * full_act));
  }
  w.head_forward.push_back(gemm("mtp_eh_proj", s.tokens, s.h / p.tp, 2 * s.h));
  if (p.tp > 1) w.head_forward.push_back(collective("mtp_eh_proj_gather", CollectiveKind::kAllGather, GroupKind::kTp, full_act));
  w.head_backward.push_back(gemm("mtp_eh_proj_dgrad", s.tokens, 2 * s.h, s.h / p.tp));
  if (p.lora_rank <= 0) w.head_backward.push_back(gemm("mtp_eh_proj_wgrad", 2 * s.h, s.h / p.tp, s.tokens));
  if (p.tp > 1) {
    w.head_backward.push_back(collective(p.sequence_parallel ? "mtp_reducescatter" : "mtp_allreduce",
                                         p.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                                         GroupKind::kTp, 2 * full_act));
  }
  w.head_backward.push_back(memory("mtp_norms_bwd", 2 * 3 * act * norm_traffic(m, p).backward));
  w.head_backward.push_back(memory("mtp_concat_bwd", 4 * act));
  if (p.lora_rank <= 0) w.head_backward.push_back(memory("mtp_embedding_bwd", 3 * full_act));
  add_head_ops(w, m, p, s);
}

}  // namespace trainsim::lowering
