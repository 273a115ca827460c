// GPT stage forward/backward; see cpu_model.hpp. Shapes: T = micro-batch tokens of this CP rank
// (B x s / cp), R = rows this rank holds outside the TP region (T, or T / tp with sequence parallelism), h hidden,
// q_l / f_l the attention / FFN width of this TP rank.
#include "runtime/cpu/cpu_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "kernels/cpu/op_clock.hpp"

namespace trainsim::cpu {

namespace {

using C = OpCategory;

}  // namespace

StageModel::StageModel(const ModelSpec& m, const runtime::StageLayout& layout, uint64_t seed)
    : layout_(layout), hidden_(m.hidden), heads_local_(m.heads / layout.tp), kv_heads_local_(m.kv_heads / layout.tp),
      head_dim_(m.head_dim), ffn_local_(m.ffn_hidden / layout.tp), seq_(m.seq_len),
      seq_local_(m.seq_len / layout.cp), positions_(runtime::context_positions(m.seq_len, layout.cp, layout.cp_rank)),
      vocab_local_(m.vocab / layout.tp), vocab_first_(layout.tp_rank * (m.vocab / layout.tp)),
      swiglu_(m.ffn_kind == FfnKind::kSwiglu), rms_norm_(m.norm == NormKind::kRmsNorm), rope_(m.position == PositionKind::kRope),
      rope_theta_(m.rope_theta) {
  runtime::check_runtime_supports(m);
  if (rope_) rotary_ = rotary_tables(positions_, head_dim_, rope_theta_);  // by local row: each at its true position
  if (m.moe) moe_shape_ = MoeShape{m.moe->experts, m.moe->top_k, swiglu_, layout.allgather_dispatch};
  runtime::StageWeights weights = runtime::initial_stage_weights(m, layout, seed);
  params_ = std::move(weights.params);
  layers_ = std::move(weights.layers);
  wte_ = weights.wte, wpe_ = weights.wpe, lnf_g_ = weights.lnf_g, lnf_b_ = weights.lnf_b, head_ = weights.head;
}

Matrix StageModel::norm(const Matrix& x, size_t gamma, size_t beta, LayerNormCache& cache) {
  const ScopedOpTimer timer(C::kNorm);
  return rms_norm_ ? rms_norm(x, v(gamma), cache) : layer_norm(x, v(gamma), v(beta), cache);
}

// Returns dx; accumulates the norm's parameter gradients.
Matrix StageModel::norm_backward(const Matrix& dy, size_t gamma, size_t beta, const LayerNormCache& cache) {
  const ScopedOpTimer timer(C::kNorm);
  Vector dg = Vector::Zero(hidden_), db = Vector::Zero(hidden_);
  Matrix dx = rms_norm_ ? rms_norm_backward(dy, v(gamma), cache, dg) : layer_norm_backward(dy, v(gamma), cache, dg, db);
  g(gamma) += dg;
  if (beta != kNone) g(beta) += db;
  return dx;
}

// y = x W (+ b): with a bias the output starts as the bias rows and the GEMM accumulates onto
// them, one pass as PyTorch's addmm (the lowering folds the bias into the GEMM).
Matrix StageModel::linear(const Matrix& x, size_t weight, size_t bias) {
  if (bias == kNone) return x * v(weight);
  Matrix y(x.rows(), v(weight).cols());
  y.rowwise() = v(bias).row(0);  // (Eigen's replicate() took 10x longer here)
  y.noalias() += x * v(weight);
  return y;
}

void StageModel::add_bias_grad(const Matrix& dy, size_t bias) {
  const ScopedOpTimer timer(C::kResidualBias);
  if (bias != kNone) add_column_sums(dy, g(bias));
}

const Matrix* StageModel::bias_or_null(size_t bias) { return bias == kNone ? nullptr : &v(bias); }

Matrix StageModel::layer_forward(const LayerParams& p, const Matrix& x, LayerCache& c, int64_t batch, TpGroup& tp) {
  const bool sp = layout_.sequence_parallel;
  c.x_in = x;
  c.ln1_out = enter_tp_region(norm(x, p.ln1_g, p.ln1_b, c.ln1), sp, tp);
  c.qkv = timed_op(C::kGemmQkv, [&] { return linear(c.ln1_out, p.w_qkv, p.b_qkv); });
  if (rope_) timed_op(C::kRotary, [&] { rotary_embedding(c.qkv, rotary_, heads_local_, kv_heads_local_, head_dim_, false); });
  c.attn_out = attention(c.qkv, batch, c);
  const Matrix o = leave_tp_region(timed_op(C::kGemmProj, [&] { return Matrix(c.attn_out * v(p.w_o)); }), sp, tp);
  c.x_mid = timed_op(C::kResidualBias, [&] { return residual_add(x, o, bias_or_null(p.b_o)); });
  c.ln2_out = norm(c.x_mid, p.ln2_g, p.ln2_b, c.ln2);
  if (!routes_own_rows()) c.ln2_out = enter_tp_region(std::move(c.ln2_out), sp, tp);
  const Matrix mlp = mlp_forward(p, c, tp);
  return timed_op(C::kResidualBias, [&] { return residual_add(c.x_mid, mlp, bias_or_null(p.b_2)); });
}

// The dense MLP (act(x W1 + b1) W2, its partial sums over TP reduced), or the MoE FFN; the caller adds b2.
Matrix StageModel::mlp_forward(const LayerParams& p, LayerCache& c, TpGroup& tp) {
  if (moe_shape_.experts > 0) return moe_mlp_forward(p, c, tp);
  c.fc1_out = timed_op(C::kGemmFc1, [&] { return linear(c.ln2_out, p.w_1, p.b_1); });
  c.fc1_act = timed_op(C::kActivation, [&] { return swiglu_ ? swiglu(c.fc1_out) : gelu(c.fc1_out); });
  return leave_tp_region(timed_op(C::kGemmFc2, [&] { return Matrix(c.fc1_act * v(p.w_2)); }), layout_.sequence_parallel, tp);
}

// From the layer output's gradient to the second norm output's (the sum over TP ranks taken).
Matrix StageModel::mlp_backward(const LayerParams& p, const Matrix& dy, const LayerCache& c, TpGroup& tp) {
  if (moe_shape_.experts > 0) return moe_mlp_backward(p, dy, c, tp);
  const bool sp = layout_.sequence_parallel;
  add_bias_grad(dy, p.b_2);
  const Matrix dm = enter_tp_region(dy, sp, tp);
  const Matrix dact = timed_op(C::kGemmFc2, [&] {
    g(p.w_2).noalias() += c.fc1_act.transpose() * dm;
    return Matrix(dm * v(p.w_2).transpose());
  });
  const Matrix dfc1 = timed_op(C::kActivation, [&] { return swiglu_ ? swiglu_backward(dact, c.fc1_out) : gelu_backward(dact, c.fc1_out); });
  timed_op(C::kGemmFc1, [&] { g(p.w_1).noalias() += c.ln2_out.transpose() * dfc1; });
  add_bias_grad(dfc1, p.b_1);
  return leave_tp_region(timed_op(C::kGemmFc1, [&] { return Matrix(dfc1 * v(p.w_1).transpose()); }), sp, tp);
}

Matrix StageModel::layer_backward(const LayerParams& p, const Matrix& dy, const LayerCache& c, int64_t batch, TpGroup& tp) {
  const bool sp = layout_.sequence_parallel;
  // MLP: y = x_mid + reduce(act(fc1) W2) + b2 (or the MoE FFN)
  const Matrix db = mlp_backward(p, dy, c, tp);
  const Matrix dnorm2 = norm_backward(db, p.ln2_g, p.ln2_b, c.ln2);
  const Matrix dx_mid = timed_op(C::kResidualBias, [&] { return residual_add(dy, dnorm2); });
  // Attention: x_mid = x + reduce(attn W_o) + b_o
  add_bias_grad(dx_mid, p.b_o);
  const Matrix dout = enter_tp_region(dx_mid, sp, tp);
  const Matrix dattn = timed_op(C::kGemmProj, [&] {
    g(p.w_o).noalias() += c.attn_out.transpose() * dout;
    return Matrix(dout * v(p.w_o).transpose());
  });
  Matrix dqkv = attention_backward(dattn, batch, c);
  if (rope_) timed_op(C::kRotary, [&] { rotary_embedding(dqkv, rotary_, heads_local_, kv_heads_local_, head_dim_, true); });
  timed_op(C::kGemmQkv, [&] { g(p.w_qkv).noalias() += c.ln1_out.transpose() * dqkv; });
  add_bias_grad(dqkv, p.b_qkv);
  const Matrix da = leave_tp_region(timed_op(C::kGemmQkv, [&] { return Matrix(dqkv * v(p.w_qkv).transpose()); }), sp, tp);
  const Matrix dnorm1 = norm_backward(da, p.ln1_g, p.ln1_b, c.ln1);
  return timed_op(C::kResidualBias, [&] { return residual_add(dx_mid, dnorm1); });
}

// The attention core: causal attention over whole sequences, or with CP the ring over this rank's chunks.
Matrix StageModel::attention(const Matrix& qkv, int64_t batch, LayerCache& c) {
  if (layout_.cp == 1) return causal_attention(qkv, batch, seq_, heads_local_, head_dim_, c.attention, kv_heads_local_);
  TRAINSIM_ASSERT(cp_ != nullptr && cp_->size() == layout_.cp, "a context-parallel stage needs its CP ring (set_cp_group)");
  return ring_attention(qkv, RingShape{batch, heads_local_, kv_heads_local_, head_dim_}, *cp_, c.ring);
}

Matrix StageModel::attention_backward(const Matrix& dout, int64_t batch, const LayerCache& c) {
  if (layout_.cp == 1) return causal_attention_backward(dout, c.qkv, batch, seq_, heads_local_, head_dim_, c.attention, kv_heads_local_);
  return ring_attention_backward(dout, c.qkv, c.attn_out, RingShape{batch, heads_local_, kv_heads_local_, head_dim_}, *cp_, c.ring);
}

Matrix StageModel::forward(const Matrix& input, MicroBatchState& s, TpGroup& tp, float loss_scale, double& loss_sum, int64_t chunk) {
  const bool embeds = layout_.embedding && chunk == 0, has_head = layout_.head && chunk == chunk_count() - 1;
  Matrix x = embeds ? embed(s, tp) : input;
  s.layers.resize(layers_.size());
  const size_t begin = static_cast<size_t>(layout_.first_local_layer(chunk));
  const size_t end = begin + static_cast<size_t>(layout_.chunks[static_cast<size_t>(chunk)].size());
  for (size_t l = begin; l < end; ++l) {
    LayerCache& c = s.layers[l];
    if (hooks_) hooks_->before_layer(static_cast<int64_t>(l), false);
    x = layer_forward(layers_[l], x, c, s.batch, tp);
    if (hooks_) hooks_->after_layer_forward(static_cast<int64_t>(l));
    if (layout_.recompute == Recompute::kFull) {
      Matrix input = std::move(c.x_in);
      c = LayerCache();
      c.x_in = std::move(input);  // the backward runs this layer's forward again from here
    } else if (layout_.recompute == Recompute::kSelective) {
      c.attention.probabilities.clear();  // recomputed from Q and K in the backward
    }
  }
  if (!has_head) return x;
  s.final_in = x;
  const Matrix xf = norm(x, lnf_g_, lnf_b_, s.final_ln);
  s.final_out = layout_.sequence_parallel ? tp.all_gather_rows(xf) : xf;
  const Matrix logits = timed_op(C::kGemmLmHead, [&] { return Matrix(s.final_out * v(head_).transpose()); });
  loss_sum = head_loss(s, logits, loss_scale, tp);
  return Matrix();
}

// The token embedding (this rank's vocabulary rows; with TP the partial lookups are summed, or
// summed and split by token rows with SP) plus learned positions of this rank's rows.
Matrix StageModel::embed(const MicroBatchState& s, TpGroup& tp) {
  const int64_t tokens = s.batch * seq_local_;
  Matrix x = timed_op(C::kEmbedding, [&] {
    Matrix out = layout_.tp > 1 ? Matrix::Zero(tokens, hidden_) : Matrix(tokens, hidden_);
    for (int64_t i = 0; i < tokens; ++i) {
      const int64_t local = s.tokens[static_cast<size_t>(i)] - vocab_first_;
      if (local >= 0 && local < vocab_local_) out.row(i) = v(wte_).row(local);
    }
    return out;
  });
  if (layout_.tp > 1) x = leave_tp_region(std::move(x), layout_.sequence_parallel, tp);
  if (wpe_ != kNone) {
    const ScopedOpTimer timer(C::kEmbedding);
    const int64_t first_row = layout_.sequence_parallel ? layout_.tp_rank * x.rows() : 0;
    for (int64_t i = 0; i < x.rows(); ++i) x.row(i) += v(wpe_).row(positions_[static_cast<size_t>((first_row + i) % seq_local_)]);
  }
  return x;
}

// Cross-entropy of this rank's logits: whole rows on one rank, Megatron's vocabulary-parallel
// reductions over TP otherwise. Fills s.dlogits (this rank's columns); returns the summed loss.
double StageModel::head_loss(MicroBatchState& s, const Matrix& logits, float loss_scale, TpGroup& tp) {
  if (layout_.tp == 1) return timed_op(C::kCrossEntropy, [&] { return cross_entropy(logits, s.targets, loss_scale, s.dlogits); });
  Matrix max = timed_op(C::kCrossEntropy, [&] { return row_max(logits); });
  tp.all_reduce_max(max);
  Matrix exp;
  Matrix stats = timed_op(C::kCrossEntropy, [&] { return shard_softmax_stats(logits, max, s.targets, vocab_first_, exp); });
  tp.all_reduce(stats);
  return timed_op(C::kCrossEntropy,
                  [&] { return shard_cross_entropy_grad(exp, max, stats, s.targets, vocab_first_, loss_scale, s.dlogits); });
}

// The embedding's backward: with TP every rank needs the gradient of every token (gathered from
// the SP row blocks) to scatter into its vocabulary rows; positions take this rank's rows.
void StageModel::embed_backward(const Matrix& dx, const MicroBatchState& s, TpGroup& tp) {
  const int64_t first_row = layout_.sequence_parallel ? layout_.tp_rank * dx.rows() : 0;
  if (wpe_ != kNone) {
    const ScopedOpTimer timer(C::kEmbedding);
    for (int64_t i = 0; i < dx.rows(); ++i) g(wpe_).row(positions_[static_cast<size_t>((first_row + i) % seq_local_)]) += dx.row(i);
  }
  const Matrix all = layout_.sequence_parallel ? tp.all_gather_rows(dx) : dx;
  const ScopedOpTimer timer(C::kEmbedding);
  if (embedding_grad_.size() == 0) embedding_grad_ = Matrix::Zero(vocab_local_, hidden_);
  for (int64_t i = 0; i < all.rows(); ++i) {
    const int64_t local = s.tokens[static_cast<size_t>(i)] - vocab_first_;
    if (local >= 0 && local < vocab_local_) embedding_grad_.row(local) += all.row(i);
  }
}

Matrix StageModel::backward(const Matrix& grad_output, MicroBatchState& s, TpGroup& tp, int64_t chunk) {
  const bool embeds = layout_.embedding && chunk == 0, has_head = layout_.head && chunk == chunk_count() - 1;
  Matrix dx;
  if (has_head) {
    Matrix dxf = timed_op(C::kGemmLmHead, [&] {
      g(head_).noalias() += s.dlogits.transpose() * s.final_out;  // this rank's vocabulary rows
      return Matrix(s.dlogits * v(head_));                        // a partial sum over TP ranks
    });
    if (layout_.tp > 1) dxf = leave_tp_region(std::move(dxf), layout_.sequence_parallel, tp);
    dx = norm_backward(dxf, lnf_g_, lnf_b_, s.final_ln);
  } else {
    dx = grad_output;
  }
  const size_t begin = static_cast<size_t>(layout_.first_local_layer(chunk));
  for (size_t l = begin + static_cast<size_t>(layout_.chunks[static_cast<size_t>(chunk)].size()); l-- > begin;) {
    LayerCache& c = s.layers[l];
    if (hooks_) hooks_->before_layer(static_cast<int64_t>(l), true);
    if (layout_.recompute == Recompute::kFull) {
      const Matrix input = c.x_in;
      layer_forward(layers_[l], input, c, s.batch, tp);
    } else if (layout_.recompute == Recompute::kSelective && layout_.cp == 1) {  // the ring keeps no probabilities
      attention(c.qkv, s.batch, c);
    }
    dx = layer_backward(layers_[l], dx, c, s.batch, tp);
    c = LayerCache();  // this micro-batch's activations of the layer are freed
    if (hooks_) hooks_->after_layer_backward(static_cast<int64_t>(l));
  }
  if (!embeds) return dx;
  // The token embedding's share of the (tied) weight's gradient is kept apart until the iteration
  // ends (finish_outer_gradients adds it).
  embed_backward(dx, s, tp);
  return Matrix();
}

std::vector<size_t> StageModel::layer_params(int64_t layer) const {
  const LayerParams& p = layers_[static_cast<size_t>(layer)];
  std::vector<size_t> out;
  for (size_t i : {p.ln1_g, p.ln1_b, p.w_qkv, p.b_qkv, p.w_o, p.b_o, p.ln2_g, p.ln2_b, p.w_1, p.b_1, p.w_2, p.b_2, p.router}) {
    if (i != kNone) out.push_back(i);
  }
  for (size_t i : p.experts) {
    if (i != kNone) out.push_back(i);
  }
  for (size_t i : p.shared) {
    if (i != kNone) out.push_back(i);
  }
  return out;
}

std::vector<size_t> StageModel::outer_params() const {
  std::vector<bool> in_layer(params_.size(), false);
  for (int64_t l = 0; l < layer_count(); ++l) {
    for (size_t i : layer_params(l)) in_layer[i] = true;
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!in_layer[i]) out.push_back(i);
  }
  return out;
}

void StageModel::finish_layer_gradients(int64_t layer, TpGroup& tp) {
  for (size_t i : layer_params(layer)) {
    if (params_[i].sp_partial_grad) tp.all_reduce(params_[i].grad);
  }
}

void StageModel::finish_outer_gradients(TpGroup& tp) {
  if (layout_.embedding && embedding_grad_.size() > 0) {
    g(wte_) += embedding_grad_;  // complete: every rank scattered every token into its vocabulary rows
    embedding_grad_.setZero();
  }
  for (size_t i : outer_params()) {
    if (params_[i].sp_partial_grad) tp.all_reduce(params_[i].grad);
  }
}

void StageModel::finish_gradients(TpGroup& tp) {
  for (int64_t l = 0; l < layer_count(); ++l) finish_layer_gradients(l, tp);
  finish_outer_gradients(tp);
}

}  // namespace trainsim::cpu
