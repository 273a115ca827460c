// Collecting a Megatron-LM argument list, and checking its model flags against --model.
#include "interop/megatron_args.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "interop/megatron_flags.hpp"
#include "interop/flag_suggestion.hpp"

namespace trainsim {

// Every flag of the file, each sorted by what it means to the prediction (interop/megatron_flags.hpp).
MegatronArgs collect_megatron_args(const std::string& text, const std::string& file, ImportedJob& job) {
  MegatronArgs args{file, {}, {}, {}};
  auto add_once = [](std::vector<std::string>& list, const std::string& entry) {
    if (std::find(list.begin(), list.end(), entry) == list.end()) list.push_back(entry);
  };
  for (const LaunchFlag& f : launch_flags(launch_words(text), megatron_switches())) {
    const MegatronFlagInfo* info = megatron_flag(f.name);
    if (info == nullptr) {
      add_once(job.unknown, with_suggestion(f.name, megatron_flag_names()));
    } else if (info->kind == MegatronFlagKind::kRefused) {
      throw InputError(file + ": " + f.name + ": " + info->why,
                       "remove it to predict the job without offload (on GPUs alone), and compare with the job's measured memory");
    } else if (info->kind == MegatronFlagKind::kNotModeled) {
      add_once(job.not_modeled, f.name + (info->why.empty() ? "" : " (" + info->why + ")"));
    } else if (info->kind == MegatronFlagKind::kNoEffect) {
      add_once(job.no_effect, f.name);
    } else if (info->kind == MegatronFlagKind::kRead && !info->is_switch && !f.value) {
      throw InputError(file + ": " + f.name + " needs a value", "write it as " + f.name + " N");
    }
    if (f.value) {
      args.values[f.name] = *f.value;
      args.lists[f.name] = {*f.value};
      args.lists[f.name].insert(args.lists[f.name].end(), f.more.begin(), f.more.end());
    }
    else args.switches.insert(f.name);
  }
  return args;
}

namespace {

// A script that states the model (--num-layers) states its architecture too: what it leaves out is
// Megatron-LM's default (LayerNorm, learned absolute positions, tied embeddings, biases).
void check_architecture(const MegatronArgs& a, const ModelSpec& m, std::vector<std::string>& problems) {
  const std::string where = a.file + ": ";
  const std::string model = "model \"" + m.name + "\"";
  const std::string norm = a.text("--normalization", "LayerNorm");
  if ((norm == "RMSNorm") != (m.norm == NormKind::kRmsNorm)) {
    problems.push_back(where + "--normalization " + norm + (a.has("--normalization") ? "" : " (Megatron's default)") + ", but " +
                       model + "'s norm is " + to_string(m.norm));
  }
  const std::string position = a.text("--position-embedding-type", "learned_absolute");
  const bool rope = position == "rope" || position == "yarn" || position == "mrope";
  if (rope != (m.position == PositionKind::kRope) || (position == "learned_absolute") != (m.position == PositionKind::kLearned)) {
    problems.push_back(where + "--position-embedding-type " + position + (a.has("--position-embedding-type") ? "" : " (Megatron's default)") +
                       ", but " + model + "'s positions are " + to_string(m.position));
  }
  if (a.has("--untie-embeddings-and-output-weights") == m.tied_embeddings) {
    problems.push_back(where + "--untie-embeddings-and-output-weights is " + (m.tied_embeddings ? "" : "not ") + "given, but " + model +
                       "'s embeddings are " + (m.tied_embeddings ? "tied" : "untied"));
  }
  if (a.has("--disable-bias-linear") == m.linear_bias) {
    problems.push_back(where + "--disable-bias-linear is " + (m.linear_bias ? "" : "not ") + "given, but " + model + "'s linear layers " +
                       (m.linear_bias ? "have" : "have no") + " biases");
  }
  if (!m.linear_bias && a.has("--add-qkv-bias") != m.qkv_bias) {
    problems.push_back(where + "--add-qkv-bias is " + (m.qkv_bias ? "not " : "") + "given, but " + model + "'s Q, K, V projections " +
                       (m.qkv_bias ? "have" : "have no") + " biases");
  }
}

// --make-vocab-size-divisible-by D: Megatron pads the vocabulary to a multiple of D x tp
// (megatron/core/tokenizers/utils/build_tokenizer.py: vocab_size_with_padding); trainsim prices the model's vocabulary.
void check_vocab_padding(const MegatronArgs& a, const ModelSpec& m, ImportedJob& job) {
  if (a.values.count("--make-vocab-size-divisible-by") == 0) return;
  const int64_t multiple = a.number("--make-vocab-size-divisible-by", 1) * a.number("--tensor-model-parallel-size", 1, 1, limits::kMaxGpus);
  const int64_t padded = (m.vocab + multiple - 1) / multiple * multiple;
  if (padded == m.vocab) return;
  job.not_modeled.push_back("--make-vocab-size-divisible-by " + a.text("--make-vocab-size-divisible-by", "") + " (the vocabulary " +
                            std::to_string(m.vocab) + " padded to " + std::to_string(padded) + "; priced unpadded)");
}

// RoPE's base and its share of each head: --rotary-base (Megatron-LM's default 10000) against the
// model's rope_theta, a note either way (the base changes the numbers, not the speed or memory);
// --rotary-percent below 1 rotates part of each head, priced as the whole.
void check_rope(const MegatronArgs& a, const ModelSpec& m, ImportedJob& job) {
  if (m.position != PositionKind::kRope) return;
  if (a.values.count("--rotary-percent") > 0 && a.real("--rotary-percent", 1.0) != 1.0) {
    job.not_modeled.push_back("--rotary-percent " + a.text("--rotary-percent", "") + " (RoPE on part of each head; priced on the whole head)");
  }
  constexpr int64_t kMegatronRotaryBase = 10000;  // arguments.py: --rotary-base default
  const bool stated = a.values.count("--rotary-base") > 0;
  if (!stated && !a.has("--position-embedding-type")) return;  // the script does not state RoPE
  const int64_t base = a.number("--rotary-base", kMegatronRotaryBase, 1, int64_t{1} << 40);
  if (static_cast<double>(base) == m.rope_theta) return;
  std::ostringstream theta;
  if (m.rope_theta > 0 && m.rope_theta < 1e15 && m.rope_theta == std::floor(m.rope_theta)) theta << static_cast<int64_t>(m.rope_theta);
  else theta << m.rope_theta;
  job.notes.push_back((stated ? "--rotary-base " + std::to_string(base) : "no --rotary-base: Megatron-LM's default " + std::to_string(base)) +
                      " is not model \"" + m.name + "\"'s rope_theta (" + theta.str() +
                      "): the same speed and memory, other numbers (write --rotary-base " + theta.str() + " for the model's)");
}

// The script's model flags against --model: every disagreement, together.
void check_shape(const MegatronArgs& a, const ModelSpec& m) {
  std::vector<std::string> problems;
  auto compare = [&](const char* flag, int64_t model_value, const char* field) {
    if (a.values.count(flag) == 0) return;
    const int64_t v = a.number(flag, 0);
    if (v != model_value) {
      problems.push_back(a.file + ": " + flag + " " + std::to_string(v) + " is not model \"" + m.name + "\"'s " + field +
                         " (" + std::to_string(model_value) + ")");
    }
  };
  compare("--num-layers", m.layers, "layers");
  compare("--hidden-size", m.hidden, "hidden");
  compare("--num-experts", m.moe ? m.moe->experts : 0, "moe.experts");
  compare("--moe-router-topk", m.moe ? m.moe->top_k : 0, "moe.top_k");
  compare("--moe-ffn-hidden-size", m.moe ? m.moe->expert_ffn_hidden : 0, "moe.expert_ffn_hidden");
  compare("--num-attention-heads", m.heads, "heads");
  compare("--ffn-hidden-size", m.ffn_hidden, "ffn_hidden");
  compare("--kv-channels", m.head_dim, "head_dim");
  if (a.has("--group-query-attention")) compare("--num-query-groups", m.kv_heads, "kv_heads");
  if (m.mla) {
    compare("--q-lora-rank", m.mla->q_lora_rank, "mla.q_lora_rank");
    compare("--kv-lora-rank", m.mla->kv_lora_rank, "mla.kv_lora_rank");
    compare("--qk-head-dim", m.mla->qk_nope_head_dim, "mla.qk_nope_head_dim");
    compare("--qk-pos-emb-head-dim", m.mla->qk_rope_head_dim, "mla.qk_rope_head_dim");
    compare("--v-head-dim", m.mla->v_head_dim, "mla.v_head_dim");
  }
  if (a.has("--num-layers") && a.has("--multi-latent-attention") != m.mla.has_value()) {
    problems.push_back(a.file + ": --multi-latent-attention is " + (a.has("--multi-latent-attention") ? "" : "not ") +
                       "given, but model \"" + m.name + "\" " + (m.mla ? "has" : "has no") + " multi-head latent attention");
  }
  if (a.has("--num-layers") && !a.has("--group-query-attention") && m.kv_heads != m.heads) {
    problems.push_back(a.file + ": no --group-query-attention, but model \"" + m.name + "\" has " + std::to_string(m.kv_heads) +
                       " kv_heads for " + std::to_string(m.heads) + " heads");
  }
  if (a.has("--num-layers") && a.has("--swiglu") != (m.ffn_kind == FfnKind::kSwiglu)) {
    problems.push_back(a.file + ": --swiglu is " + (a.has("--swiglu") ? "" : "not ") + "given, but model \"" + m.name +
                       "\"'s FFN is " + to_string(m.ffn_kind));
  }
  if (a.has("--num-layers") && a.number("--mtp-num-layers", 0) != m.mtp_layers) {
    problems.push_back(a.file + ": --mtp-num-layers " + std::to_string(a.number("--mtp-num-layers", 0)) + (a.has("--mtp-num-layers") ? "" : " (absent)") +
                       " is not model \"" + m.name + "\"'s mtp_layers (" + std::to_string(m.mtp_layers) + "): --mtp-layers " +
                       std::to_string(a.number("--mtp-num-layers", 0)) + " gives the model the script's multi-token-prediction depths");
  }
  if (a.has("--num-layers")) check_architecture(a, m, problems);
  if (!problems.empty()) throw InputError(problems, "give the --model the script trains (a Hugging Face config.json works)");
}

}  // namespace

void check_megatron_model(const MegatronArgs& a, const ModelSpec& m, ImportedJob& job) {
  check_shape(a, m);
  check_rope(a, m, job);
  check_vocab_padding(a, m, job);
}

}  // namespace trainsim
