// NeMo and Megatron-Bridge YAML configs (`--from nemo FILE.yaml`). Two layouts name Megatron-Core's
// settings:
// - NeMo 1.x / NeMo-Megatron-Launcher training configs (conf/training/<model>/<size>.yaml):
//   `trainer:` (num_nodes, devices, precision) and `model:` (micro_batch_size, global_batch_size,
//   the parallel sizes, activations_checkpoint_granularity / _method / _num_layers,
//   encoder_seq_length, optim.name distributed_fused_adam for the distributed optimizer, fp8).
// - Megatron-Bridge's ConfigContainer YAML (a run's config dump or an override file):
//   `model:` with TransformerConfig's field names, `train:` (batch sizes), `optimizer:` / `ddp:`
//   (use_distributed_optimizer, overlap_grad_reduce), `comm_overlap:`, `dist:`, `mixed_precision:`.
// Each setting the reader knows becomes the Megatron-LM argument it stands for, and the Megatron
// reader (interop/megatron_import.cpp) reads those, so both formats follow one set of rules; its
// messages name the YAML keys. Other keys under `model:` are listed as not modeled; OmegaConf
// interpolations (`${...}`) cannot be resolved without the rest of the config and are listed too.
#include <algorithm>
#include <cctype>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/errors.hpp"
#include "common/limits.hpp"
#include "interop/launch_args.hpp"
#include "interop/plan_import.hpp"

namespace trainsim {

namespace {

enum class Kind { kValue, kSwitch, kList };

// A Megatron-LM argument and the YAML keys (section.key, first found wins) that state it.
struct KeyFlag {
  const char* flag;
  Kind kind;
  std::vector<const char*> keys;
};

const std::vector<KeyFlag>& key_flags() {
  static const std::vector<KeyFlag> table = {
      {"--tensor-model-parallel-size", Kind::kValue, {"model.tensor_model_parallel_size"}},
      {"--pipeline-model-parallel-size", Kind::kValue, {"model.pipeline_model_parallel_size"}},
      {"--num-virtual-stages-per-pipeline-rank", Kind::kValue, {"model.virtual_pipeline_model_parallel_size"}},
      {"--context-parallel-size", Kind::kValue, {"model.context_parallel_size"}},
      {"--expert-model-parallel-size", Kind::kValue, {"model.expert_model_parallel_size"}},
      {"--expert-tensor-parallel-size", Kind::kValue, {"model.expert_tensor_parallel_size"}},
      {"--sequence-parallel", Kind::kSwitch, {"model.sequence_parallel"}},
      {"--micro-batch-size", Kind::kValue, {"train.micro_batch_size", "model.micro_batch_size"}},
      {"--global-batch-size", Kind::kValue, {"train.global_batch_size", "model.global_batch_size"}},
      {"--recompute-granularity", Kind::kValue, {"model.recompute_granularity", "model.activations_checkpoint_granularity"}},
      {"--recompute-method", Kind::kValue, {"model.recompute_method", "model.activations_checkpoint_method"}},
      {"--recompute-num-layers", Kind::kValue, {"model.recompute_num_layers", "model.activations_checkpoint_num_layers"}},
      {"--recompute-modules", Kind::kList, {"model.recompute_modules"}},
      {"--seq-length", Kind::kValue, {"model.seq_length", "model.encoder_seq_length"}},
      {"--moe-token-dispatcher-type", Kind::kValue, {"model.moe_token_dispatcher_type"}},
      {"--moe-expert-capacity-factor", Kind::kValue, {"model.moe_expert_capacity_factor"}},
      {"--cp-comm-type", Kind::kValue, {"model.cp_comm_type"}},
      {"--overlap-moe-expert-parallel-comm", Kind::kSwitch, {"comm_overlap.overlap_moe_expert_parallel_comm", "model.overlap_moe_expert_parallel_comm"}},
      {"--tp-comm-overlap", Kind::kSwitch, {"comm_overlap.tp_comm_overlap", "model.tp_comm_overlap", "model.ub_tp_comm_overlap"}},
      {"--overlap-grad-reduce", Kind::kSwitch, {"ddp.overlap_grad_reduce", "model.overlap_grad_sync"}},
      {"--use-distributed-optimizer", Kind::kSwitch, {"optimizer.use_distributed_optimizer", "ddp.use_distributed_optimizer"}},
      {"--use-torch-fsdp2", Kind::kSwitch, {"dist.use_torch_fsdp2"}},
      {"--fp8-param-gather", Kind::kSwitch, {"model.fp8_param_gather", "model.fp8_param", "mixed_precision.fp8_param_gather"}},
      {"--use-flash-attn", Kind::kSwitch, {"model.use_flash_attention"}},
      // Megatron-Bridge's TransformerConfig: cuda_graph_impl and cuda_graph_scope (a list); NeMo 2's
      // enable_cuda_graph (local graphs of whole layers) and external_cuda_graph.
      {"--cuda-graph-impl", Kind::kValue, {"model.cuda_graph_impl"}},
      {"--cuda-graph-modules", Kind::kList, {"model.cuda_graph_modules", "model.cuda_graph_scope"}},
      {"--enable-cuda-graph", Kind::kSwitch, {"model.enable_cuda_graph"}},
      {"--external-cuda-graph", Kind::kSwitch, {"model.external_cuda_graph"}},
      {"--use-transformer-engine-op-fuser", Kind::kSwitch, {"model.use_transformer_engine_op_fuser"}},
      {"--cpu-offloading-num-layers", Kind::kValue, {"model.cpu_offloading_num_layers"}},
  };
  return table;
}

// The model's shape as the config states it, against --model: only the keys it has (an override
// file states a few), every disagreement together.
struct ShapeKey {
  const char* key;
  const char* field;
  int64_t (*of)(const ModelSpec&);
};
const std::vector<ShapeKey>& shape_keys() {
  static const std::vector<ShapeKey> keys = {
      {"model.num_layers", "layers", [](const ModelSpec& m) { return m.layers; }},
      {"model.hidden_size", "hidden", [](const ModelSpec& m) { return m.hidden; }},
      {"model.ffn_hidden_size", "ffn_hidden", [](const ModelSpec& m) { return m.ffn_hidden; }},
      {"model.num_attention_heads", "heads", [](const ModelSpec& m) { return m.heads; }},
      {"model.num_query_groups", "kv_heads", [](const ModelSpec& m) { return m.kv_heads; }},
      {"model.kv_channels", "head_dim", [](const ModelSpec& m) { return m.head_dim; }},
      {"model.num_moe_experts", "moe.experts", [](const ModelSpec& m) { return m.moe ? m.moe->experts : int64_t{0}; }},
      {"model.moe_router_topk", "moe.top_k", [](const ModelSpec& m) { return m.moe ? m.moe->top_k : int64_t{0}; }},
      {"model.moe_ffn_hidden_size", "moe.expert_ffn_hidden", [](const ModelSpec& m) { return m.moe ? m.moe->expert_ffn_hidden : int64_t{0}; }},
      {"model.mtp_num_layers", "mtp_layers (--mtp-layers sets it)", [](const ModelSpec& m) { return m.mtp_layers; }},
  };
  return keys;
}

// Keys under `model:` that say nothing about performance (initialization, logging, numerics of
// the loss scale, checkpoint paths): not listed as not modeled.
bool quiet_model_key(const std::string& key) {
  static const std::vector<std::string> quiet = {
      "init_method_std", "seed", "resume_from_checkpoint", "onnx_safe", "apex_transformer_log_level", "use_cpu_initialization",
      "native_amp_init_scale", "native_amp_growth_interval", "hysteresis", "layernorm_epsilon", "make_vocab_size_divisible_by",
      "max_position_embeddings", "pre_process", "post_process", "restore_from_path", "nsys_profile", "tokenizer", "data", "optim"};
  return std::find(quiet.begin(), quiet.end(), key) != quiet.end();
}

// Keys the reader turns into something other than one table entry (precision, FP8, the FFN,
// attention, the optimizer's name).
bool handled_model_key(const std::string& key) {
  static const std::vector<std::string> handled = {"fp8", "fp16", "bf16", "activation", "gated_linear_unit", "transformer_engine",
                                                   "moe_shared_expert_intermediate_size", "hidden_dropout", "attention_dropout",
                                                   "transformer_impl", "share_embeddings_and_output_weights",
                                                   "untie_embeddings_and_output_weights", "bias", "add_bias_linear", "normalization",
                                                   "position_embedding_type", "pipeline_model_parallel_layout"};
  return std::find(handled.begin(), handled.end(), key) != handled.end();
}

struct Reader {
  YAML::Node root;
  std::string file;
  std::ostringstream args;
  std::vector<std::pair<std::string, std::string>> flag_keys;  // Megatron flag -> the YAML key it came from
  std::vector<std::string> not_modeled;

  YAML::Node at(const std::string& dotted) const {
    const size_t dot = dotted.find('.');
    const YAML::Node section = root[dotted.substr(0, dot)];
    if (!section || !section.IsMap()) return YAML::Node();
    return section[dotted.substr(dot + 1)];
  }
  static bool interpolated(const YAML::Node& n) { return n.IsScalar() && n.Scalar().find("${") != std::string::npos; }
  // The first of `keys` the config states (null stands for Megatron-Core's default): its node and key.
  bool stated(const std::vector<const char*>& keys, YAML::Node& node, std::string& key_out) {
    for (const char* key : keys) {
      const YAML::Node n = at(key);
      if (!n || n.IsNull()) continue;
      if (interpolated(n)) {
        not_modeled.push_back(std::string(key) + ": " + n.Scalar() + " (an interpolation: write the value)");
        continue;
      }
      key_out = key;
      node = n;
      return true;
    }
    return false;
  }
  bool truthy(const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) throw InputError(file + ": " + key + ": expected true or false", "write true or false");
    const std::string v = n.Scalar();
    if (v == "true" || v == "True" || v == "TRUE") return true;
    if (v == "false" || v == "False" || v == "FALSE") return false;
    throw InputError(file + ": " + key + ": \"" + v + "\" is not true or false", "write true or false");
  }
  void emit(const std::string& flag, const std::string& key, const std::string& values) {
    args << " " << flag << values;
    flag_keys.emplace_back(flag, key);
  }
};

void read_table(Reader& r) {
  for (const KeyFlag& kf : key_flags()) {
    std::string key;
    YAML::Node n;
    if (!r.stated(kf.keys, n, key)) continue;
    if (kf.kind == Kind::kSwitch) {
      if (r.truthy(n, key)) r.emit(kf.flag, key, "");
    } else if (kf.kind == Kind::kList) {
      if (!n.IsSequence()) throw InputError(r.file + ": " + key + ": expected a list (e.g. [core_attn, moe_act])", "write the names as a YAML list");
      std::string values;
      for (const YAML::Node& item : n) values += " " + item.as<std::string>();
      if (!values.empty()) r.emit(kf.flag, key, values);
    } else {
      if (!n.IsScalar()) throw InputError(r.file + ": " + key + ": expected a value, got a " + (n.IsMap() ? "map" : "list"), "write one value");
      const std::string value = n.Scalar();
      if (kf.flag == std::string("--recompute-granularity") && (value == "None" || value == "none")) continue;
      r.emit(kf.flag, key, " " + value);
    }
  }
}

// model.pipeline_model_parallel_layout: Megatron-Core's string ("Et*4|(t*4|)*14tmL"), or the list of
// stages Megatron-Bridge's recipes write ([[embedding, decoder, ...], ..., [decoder, mtp, loss]]),
// passed on as --pipeline-model-parallel-layout (interop/megatron_import.cpp reads it).
void read_layout(Reader& r) {
  const char* const key = "model.pipeline_model_parallel_layout";
  const YAML::Node n = r.at(key);
  if (!n || n.IsNull()) return;
  std::string text;
  if (n.IsScalar()) {
    text = n.Scalar();
  } else if (n.IsSequence()) {
    for (const YAML::Node& stage : n) {
      if (!text.empty()) text += "|";
      if (!stage.IsSequence()) throw InputError(r.file + ": " + key + ": each stage must be a list of layer kinds", "e.g. [[embedding, decoder], [decoder, loss]]");
      for (const YAML::Node& item : stage) {
        const std::string kind = item.IsScalar() ? item.Scalar() : "";
        const char symbol = kind == "embedding" ? 'E' : kind == "decoder" ? 't' : kind == "mtp" ? 'm' : kind == "loss" ? 'L' : '?';
        if (symbol == '?') {
          throw InputError(r.file + ": " + key + ": \"" + kind + "\" is not a layer kind", "the kinds are embedding, decoder, mtp and loss");
        }
        text += symbol;
      }
    }
  }
  r.emit("--pipeline-model-parallel-layout", key, " '" + text + "'");
}

// Precision and FP8: trainer.precision (NeMo 1: bf16, bf16-mixed, 16, 16-mixed, 32), Megatron-
// Bridge's mixed_precision recipe name ("bf16_mixed", "bf16_with_fp8_current_scaling_mixed", ...),
// model.bf16 / fp16 switches; model.fp8 (NeMo 1: true; Megatron-Core: "hybrid" or "e4m3").
void read_precision(Reader& r) {
  std::string precision;
  if (const YAML::Node n = r.at("trainer.precision"); n && n.IsScalar()) precision = n.Scalar();
  if (const YAML::Node n = r.root["mixed_precision"]; n && n.IsScalar()) precision = n.Scalar();
  if (const YAML::Node n = r.at("model.bf16"); n && n.IsScalar() && r.truthy(n, "model.bf16")) precision = "bf16";
  if (const YAML::Node n = r.at("model.fp16"); n && n.IsScalar() && r.truthy(n, "model.fp16")) precision = "16";
  bool fp8 = precision.find("fp8") != std::string::npos;
  if (precision.rfind("bf16", 0) == 0) r.emit("--bf16", "precision " + precision, "");
  else if (precision.rfind("16", 0) == 0 || precision.rfind("fp16", 0) == 0) r.emit("--fp16", "precision " + precision, "");
  if (const YAML::Node n = r.at("model.fp8"); n && n.IsScalar() && !n.IsNull()) {
    const std::string v = n.Scalar();
    fp8 = fp8 || (v != "false" && v != "False" && v != "null" && v != "None");
  }
  if (fp8) r.emit("--fp8-format", "model.fp8", " hybrid");
  // The scaling recipe: Megatron-Core's TransformerConfig.fp8_recipe, or the name of
  // Megatron-Bridge's mixed-precision recipe (bf16_with_fp8_current_scaling_mixed,
  // bf16_with_fp8_subchannel_scaling_mixed, bf16_with_mxfp8_mixed; delayed otherwise).
  std::string recipe, recipe_key = "mixed_precision";
  if (precision.find("current_scaling") != std::string::npos) recipe = "tensorwise";
  else if (precision.find("subchannel") != std::string::npos) recipe = "blockwise";
  else if (precision.find("mxfp8") != std::string::npos) recipe = "mxfp8";
  if (const YAML::Node n = r.at("model.fp8_recipe"); n && n.IsScalar() && !n.IsNull()) {
    recipe = n.Scalar();
    recipe_key = "model.fp8_recipe";
  }
  if (fp8 && !recipe.empty()) r.emit("--fp8-recipe", recipe_key, " " + recipe);
  // Megatron-Bridge's bf16_with_nvfp4_mixed: Megatron-Core's fp4 "e2m1" with the nvfp4 recipe.
  if (precision.find("nvfp4") != std::string::npos) r.emit("--fp4-format", "mixed_precision", " e2m1");
  // Gradients in bf16: DistributedDataParallelConfig.grad_reduce_in_fp32 false (ddp: or the
  // mixed_precision: section of a ConfigContainer dump).
  std::string key;
  YAML::Node n;
  if (r.stated({"ddp.grad_reduce_in_fp32", "mixed_precision.grad_reduce_in_fp32"}, n, key) && !r.truthy(n, key)) {
    r.emit("--grad-reduce-in-bf16", key, "");
  }
  // The named FP8 recipes keep FP8 primary weights unless the config says otherwise (NeMo 2's
  // bf16_with_fp8_mixed: fp8_params=True; Megatron-Bridge's delayed, current-scaling and MXFP8
  // recipes: fp8_param_gather=True; its subchannel and NVFP4 ones do not).
  const bool recipe_params = precision == "bf16_with_fp8_mixed" || precision == "bf16_with_fp8_delayed_scaling_mixed" ||
                             precision == "bf16_with_fp8_current_scaling_mixed" || precision == "bf16_with_mxfp8_mixed";
  if (recipe_params && !r.stated({"model.fp8_param_gather", "model.fp8_param", "mixed_precision.fp8_param_gather"}, n, key)) {
    r.emit("--fp8-param-gather", "mixed_precision " + precision, "");
  }
}

void check_shape(Reader& r, const ModelSpec& m) {
  std::vector<std::string> problems;
  for (const ShapeKey& k : shape_keys()) {
    const YAML::Node n = r.at(k.key);
    if (!n || n.IsNull()) continue;
    if (Reader::interpolated(n)) {
      r.not_modeled.push_back(std::string(k.key) + ": " + n.Scalar() + " (an interpolation: not checked against the model)");
      continue;
    }
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    const int64_t v = parse_count(r.file, k.key, text, 0, limits::kMaxSeqLen);
    if (v != k.of(m)) {
      problems.push_back(r.file + ": " + k.key + " " + text + " is not model \"" + m.name + "\"'s " + k.field + " (" + std::to_string(k.of(m)) + ")");
    }
  }
  const YAML::Node act = r.at("model.activation"), glu = r.at("model.gated_linear_unit");
  if ((act && act.IsScalar()) || (glu && glu.IsScalar())) {
    const bool gated = act && act.IsScalar() ? act.Scalar().find("glu") != std::string::npos : r.truthy(glu, "model.gated_linear_unit");
    if (gated != (m.ffn_kind == FfnKind::kSwiglu)) {
      problems.push_back(r.file + ": " + (act && act.IsScalar() ? "model.activation " + act.Scalar() : "model.gated_linear_unit " + glu.Scalar()) +
                         " is not model \"" + m.name + "\"'s FFN (" + to_string(m.ffn_kind) + ")");
    }
  }
  if (!problems.empty()) throw InputError(problems, "give the --model the config trains (a Hugging Face config.json works)");
}

// The attention kernel: Transformer Engine's fused attention unless the config says it runs
// Megatron's local layers (Megatron-Bridge runs Transformer Engine by default); the optimizer.
void read_model_kinds(Reader& r, bool bridge) {
  const YAML::Node te = r.at("model.transformer_engine");
  const YAML::Node impl = r.at("model.transformer_impl");
  const bool local = impl && impl.IsScalar() && impl.Scalar() == "local";
  if (!local && ((te && te.IsScalar() && r.truthy(te, "model.transformer_engine")) || bridge)) {
    r.emit("--transformer-impl", te ? "model.transformer_engine" : "Megatron-Bridge's default", " transformer_engine");
  }
  const YAML::Node optim = r.at("model.optim");
  if (optim && optim.IsMap() && optim["name"] && optim["name"].IsScalar()) {
    const std::string name = optim["name"].Scalar();
    if (name == "distributed_fused_adam" || name == "mcore_distributed_optim") r.emit("--use-distributed-optimizer", "model.optim.name " + name, "");
  }
}

// World size: NeMo 1's trainer.num_nodes x trainer.devices, as torchrun's would say it.
void read_world(Reader& r) {
  const YAML::Node nodes = r.at("trainer.num_nodes"), devices = r.at("trainer.devices");
  if (!devices || !devices.IsScalar() || Reader::interpolated(devices)) return;
  r.emit("--nproc-per-node", "trainer.devices", " " + devices.Scalar());
  if (nodes && nodes.IsScalar() && !Reader::interpolated(nodes)) r.emit("--nnodes", "trainer.num_nodes", " " + nodes.Scalar());
}

// Keys under `model:` that neither the table nor the readers above take.
void list_unread(Reader& r) {
  const YAML::Node model = r.root["model"];
  if (!model || !model.IsMap()) return;
  for (const auto& entry : model) {
    const std::string key = entry.first.as<std::string>();
    const std::string dotted = "model." + key;
    bool known = handled_model_key(key) || quiet_model_key(key);
    for (const KeyFlag& kf : key_flags()) {
      for (const char* k : kf.keys) known = known || dotted == k;
    }
    for (const ShapeKey& k : shape_keys()) known = known || dotted == k.key;
    if (!known && !entry.second.IsNull()) r.not_modeled.push_back(dotted);
  }
}

// The Megatron reader's message with each flag named as the YAML key it came from.
std::string in_yaml_terms(std::string message, const Reader& r) {
  for (const auto& [flag, key] : r.flag_keys) {
    for (size_t at = message.find(flag); at != std::string::npos; at = message.find(flag, at + key.size())) {
      const char next = at + flag.size() < message.size() ? message[at + flag.size()] : ' ';
      if (std::isalnum(static_cast<unsigned char>(next)) != 0 || next == '-') continue;  // a longer flag
      message.replace(at, flag.size(), key);
    }
  }
  return message;
}

}  // namespace

ImportedJob import_nemo(const std::string& yaml_text, const std::string& file, const ModelSpec& model, int64_t gpus) {
  Reader r;
  r.file = file;
  try {
    r.root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError(file + ": not YAML: " + e.what(), "give the NeMo or Megatron-Bridge config (.yaml) of the job");
  }
  if (!r.root.IsMap() || (!r.root["model"] && !r.root["train"])) {
    throw InputError(file + ": no model: or train: section (a NeMo training config or a Megatron-Bridge ConfigContainer has one)",
                     "give the job's config YAML (NeMo-Megatron-Launcher conf/training/..., or Megatron-Bridge's config dump)");
  }
  const bool bridge = static_cast<bool>(r.root["train"]);
  try {
    check_shape(r, model);
    read_table(r);
    read_layout(r);
    read_precision(r);
    read_model_kinds(r, bridge);
    read_world(r);
    list_unread(r);
    ImportedJob job = import_megatron(r.args.str(), file, model, gpus);
    // NeMo's and Megatron-Bridge's comm-overlap config switches TP overlap off below TP 2 or
    // without SP, with a warning (megatron/bridge/training/comm_overlap.py); Megatron-LM would
    // refuse it. A note, not a refusal.
    if (job.plan.tp_comm_overlap && (job.plan.tp < 2 || !job.plan.sequence_parallel)) {
      job.plan.tp_comm_overlap = false;
      job.notes.push_back(std::string("--tp-comm-overlap with ") + (job.plan.tp < 2 ? "TP 1" : "no sequence parallelism") +
                          ": NeMo and Megatron-Bridge switch it off (comm_overlap.py), and so does the plan");
    }
    for (std::string& entry : job.not_modeled) entry = in_yaml_terms(entry, r);
    for (std::string& note : job.notes) note = in_yaml_terms(note, r);
    job.not_modeled.insert(job.not_modeled.end(), r.not_modeled.begin(), r.not_modeled.end());
    return job;
  } catch (const InputError& e) {
    std::vector<std::string> problems;
    for (const std::string& p : e.problems()) problems.push_back(in_yaml_terms(p, r));
    throw InputError(problems, in_yaml_terms(e.hint(), r));
  } catch (const YAML::Exception& e) {
    throw InputError(file + ": " + e.what(), "check the config's types (numbers, true/false, lists)");
  }
}

}  // namespace trainsim
