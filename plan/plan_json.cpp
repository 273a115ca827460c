// Reading and writing plan JSON.
#include "plan/plan_json.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"

namespace trainsim {

Recompute parse_recompute(const std::string& t) {
  if (t == "none") return Recompute::kNone;
  if (t == "selective") return Recompute::kSelective;
  if (t == "full") return Recompute::kFull;
  if (t == "selective_op") return Recompute::kSelectiveOp;
  throw InputError("recompute: \"" + t + "\" is not one of: none, selective, full, selective_op");
}

RecomputeMethod parse_recompute_method(const std::string& t) {
  if (t == "uniform") return RecomputeMethod::kUniform;
  if (t == "block") return RecomputeMethod::kBlock;
  if (t == "every") return RecomputeMethod::kEvery;
  throw InputError("recompute_method: \"" + t + "\" is not one of: uniform, block, every");
}

LossKernel parse_cross_entropy(const std::string& t) {
  if (t == "fused") return LossKernel::kFused;
  if (t == "pytorch") return LossKernel::kPytorch;
  if (t == "compiled") return LossKernel::kCompiled;
  throw InputError("cross_entropy: \"" + t + "\" is not one of: fused, pytorch, compiled");
}

Schedule parse_schedule(const std::string& t) {
  if (t == "gpipe") return Schedule::kGpipe;
  if (t == "1f1b") return Schedule::k1F1B;
  if (t == "interleaved") return Schedule::kInterleaved;
  if (t == "zb-1p") return Schedule::kZeroBubble1p;
  if (t == "zb-2p") return Schedule::kZeroBubble2p;
  if (t == "zb-v") return Schedule::kZeroBubbleV;
  throw InputError("schedule: \"" + t + "\" is not one of: gpipe, 1f1b, interleaved, zb-1p, zb-2p, zb-v");
}

MoeDispatcher parse_moe_dispatcher(const std::string& t) {
  if (t == "alltoall") return MoeDispatcher::kAllToAll;
  if (t == "allgather") return MoeDispatcher::kAllGather;
  if (t == "flex") return MoeDispatcher::kFlex;
  throw InputError("moe_dispatcher: \"" + t + "\" is not one of: alltoall, allgather, flex");
}

HostStack parse_host_stack(const std::string& t) {
  if (t == "pytorch") return HostStack::kPytorch;
  if (t == "transformer_engine") return HostStack::kTransformerEngine;
  throw InputError("host_stack: \"" + t + "\" is not one of: pytorch, transformer_engine");
}

CudaGraphs parse_cuda_graph_scope(const std::string& name) {
  const CudaGraphs flag = cuda_graph_flag(name);
  if (flag == 0) throw InputError("cuda_graphs: \"" + name + "\" is not a scope (one of: " + cuda_graph_names() + ")");
  return flag;
}

CudaGraphs parse_cuda_graphs(const std::vector<std::string>& names) {
  CudaGraphs graphs = 0;
  for (const std::string& name : names) graphs |= parse_cuda_graph_scope(name);
  return graphs;
}

CudaGraphs parse_cuda_graph_list(const std::string& text) {
  if (text.empty() || text == "none") return 0;
  CudaGraphs graphs = 0;
  for (size_t begin = 0; begin <= text.size();) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    graphs |= parse_cuda_graph_scope(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return graphs;
}

CpComm parse_cp_comm(const std::string& t) {
  if (t == "p2p") return CpComm::kP2p;
  if (t == "all_gather") return CpComm::kAllGather;
  if (t == "a2a") return CpComm::kA2a;
  throw InputError("cp_comm: \"" + t + "\" is not one of: p2p, all_gather, a2a");
}

Fp8Recipe parse_fp8_recipe(const std::string& t) {
  if (t == "rowwise") return Fp8Recipe::kRowwise;
  if (t == "tensorwise") return Fp8Recipe::kTensorwise;
  if (t == "blockwise") return Fp8Recipe::kBlockwise;
  if (t == "delayed") return Fp8Recipe::kDelayed;
  throw InputError("fp8_recipe: \"" + t + "\" is not one of: delayed, tensorwise, blockwise, rowwise");
}

Precision parse_precision(const std::string& t) {
  if (t == "bf16") return Precision::kBf16;
  if (t == "fp16") return Precision::kFp16;
  if (t == "fp32") return Precision::kFp32;
  if (t == "fp8") return Precision::kFp8;
  if (t == "mxfp8") return Precision::kMxfp8;
  if (t == "nvfp4") return Precision::kNvfp4;
  throw InputError("precision: \"" + t + "\" is not one of: bf16, fp16, fp32, fp8, mxfp8, nvfp4");
}

AttentionKernel parse_attention(const std::string& t) {
  if (t == "flash") return AttentionKernel::kFlash;
  if (t == "unfused") return AttentionKernel::kUnfused;
  throw InputError("attention: \"" + t + "\" is not one of: flash, unfused");
}

std::vector<int64_t> parse_pipeline_layout(const std::string& text) {
  std::vector<int64_t> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const bool digits = !item.empty() && item.size() <= 9 && std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      throw InputError("pipeline layout \"" + text + "\": \"" + item + "\" is not a layer count",
                       "give each virtual stage's transformer layers in model order, e.g. 4,4,4,1 (pp x vpp whole numbers)");
    }
    out.push_back(std::stoll(item));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

RecomputeModules parse_recompute_module(const std::string& name) {
  const RecomputeModules flag = recompute_module_flag(name);
  if (flag == 0) {
    throw InputError("\"" + name + "\" is not a recompute module (" + std::string(recompute_module_names()) + ")",
                     "Megatron-Core's linear-attention modules are not modeled");
  }
  return flag;
}

RecomputeModules parse_recompute_modules(const std::vector<std::string>& names) {
  RecomputeModules modules = 0;
  for (const std::string& name : names) modules |= parse_recompute_module(name);
  return modules;
}

std::vector<std::string> recompute_module_list(RecomputeModules modules) {
  std::vector<std::string> out;
  const std::string text = recompute_modules_text(modules);
  for (size_t begin = 0; begin < text.size();) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    out.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return out;
}

namespace {
// recompute_method and recompute_layers (validate_plan checks them against recompute); a uniform
// group needs a layer, so 0 is refused here too, where a plan read without a model is exported.
void read_recompute_span(JsonObjectReader& r, ParallelPlan& p) {
  if (auto v = r.optional_choice("recompute_method", {"uniform", "block", "every"})) p.recompute_method = parse_recompute_method(*v);
  if (auto n = r.optional_int("recompute_layers", 0)) {
    if (*n == 0 && p.recompute_method != RecomputeMethod::kBlock) {
      r.add_problem("recompute_layers", std::string("recompute_layers (0) must be >= 1 with recompute_method ") + to_string(p.recompute_method) +
                                            " (uniform: the layers of each recomputed group; every: one in N recomputed; block 0 recomputes none)");
    } else {
      p.recompute_layers = *n;
    }
  }
}
}  // namespace

ParallelPlan read_plan(JsonObjectReader& r, const ParallelPlan& defaults, std::vector<std::string>* defaulted) {
  ParallelPlan p = defaults;
  auto note_default = [&](const char* key) {
    if (defaulted != nullptr && !r.has(key)) defaulted->push_back(key);
  };
  auto read_int = [&](const char* key, int64_t& field, int64_t min_value) {
    note_default(key);
    field = r.optional_int(key, min_value).value_or(field);
  };
  auto read_bool = [&](const char* key, bool& field) {
    note_default(key);
    field = r.optional_bool(key).value_or(field);
  };
  read_int("dp", p.dp, 1);
  read_int("tp", p.tp, 1);
  read_int("pp", p.pp, 1);
  read_int("cp", p.cp, 1);
  read_int("ep", p.ep, 1);
  p.expert_tp = r.optional_int("expert_tp", 1).value_or(p.expert_tp);
  read_int("vpp", p.vpp, 1);
  read_int("micro_batch", p.micro_batch, 1);
  p.first_stage_layers = r.optional_int("first_stage_layers", 1).value_or(p.first_stage_layers);
  p.dp_shard = r.optional_int("dp_shard", 1).value_or(p.dp_shard);
  p.last_stage_layers = r.optional_int("last_stage_layers", 1).value_or(p.last_stage_layers);
  if (auto layout = r.optional_int_list("pipeline_layout", 0)) p.pipeline_layout = *layout;
  read_int("global_batch", p.global_batch, 1);
  note_default("zero_stage");
  if (auto z = r.optional_int("zero_stage", 0)) {
    if (*z > 3) r.add_problem("zero_stage", "zero_stage (" + std::to_string(*z) + ") must be 0, 1, 2 or 3");
    else p.zero_stage = static_cast<int>(*z);
  }
  note_default("recompute");
  if (auto v = r.optional_choice("recompute", {"none", "selective", "full", "selective_op"})) p.recompute = parse_recompute(*v);
  read_recompute_span(r, p);
  if (auto names = r.optional_string_list("recompute_modules")) {
    try {
      p.recompute_modules = parse_recompute_modules(*names);
    } catch (const InputError& e) {
      r.add_problem("recompute_modules", e.problems().front());
    }
  }
  read_bool("sequence_parallel", p.sequence_parallel);
  if (auto v = r.optional_choice("schedule", {"gpipe", "1f1b", "interleaved", "zb-1p", "zb-2p", "zb-v"})) {
    p.schedule = parse_schedule(*v);
    if (p.schedule == Schedule::kZeroBubbleV && !r.has("vpp")) p.vpp = 2;  // ZB-V's two chunks per rank
  } else if (p.vpp > 1) {
    p.schedule = Schedule::kInterleaved;  // vpp > 1 means the interleaved schedule
  }
  if (auto v = r.optional_choice("precision", {"bf16", "fp16", "fp32", "fp8", "mxfp8", "nvfp4"})) p.precision = parse_precision(*v);
  note_default("attention");
  if (auto v = r.optional_choice("attention", {"flash", "unfused"})) p.attention = parse_attention(*v);
  note_default("cross_entropy");
  if (auto v = r.optional_choice("cross_entropy", {"fused", "pytorch", "compiled"})) p.cross_entropy = parse_cross_entropy(*v);
  note_default("norm");
  if (auto v = r.optional_choice("norm", {"fused", "eager"})) p.norm = *v == "eager" ? NormKernel::kEager : NormKernel::kFused;
  if (auto v = r.optional_choice("cp_comm", {"p2p", "all_gather", "a2a"})) p.cp_comm = parse_cp_comm(*v);
  read_bool("dp_overlap", p.dp_overlap);
  read_bool("tp_overlap", p.tp_overlap);
  read_bool("tp_comm_overlap", p.tp_comm_overlap);
  note_default("zero3_collectives");
  if (auto v = r.optional_choice("zero3_collectives", {"per_layer", "deepspeed"})) {
    p.zero3_collectives = *v == "deepspeed" ? Zero3Collectives::kDeepSpeed : Zero3Collectives::kPerLayer;
  }
  note_default("zero_engine");
  if (auto v = r.optional_choice("zero_engine", {"megatron", "deepspeed"})) {
    p.zero_engine = *v == "deepspeed" ? ZeroEngine::kDeepSpeed : ZeroEngine::kMegatron;
  }
  p.deepspeed_reduce_bucket = r.optional_number("deepspeed_reduce_bucket", 1.0).value_or(p.deepspeed_reduce_bucket);
  p.deepspeed_prefetch_bucket = r.optional_number("deepspeed_prefetch_bucket", 1.0).value_or(p.deepspeed_prefetch_bucket);
  p.deepspeed_contiguous_gradients = r.optional_bool("deepspeed_contiguous_gradients").value_or(p.deepspeed_contiguous_gradients);
  read_bool("fp8_params", p.fp8_params);
  read_bool("grad_reduce_in_fp32", p.grad_reduce_in_fp32);
  read_bool("torchao_float8", p.torchao_float8);
  read_bool("softmax_fusion", p.softmax_fusion);
  read_bool("bias_gelu_fusion", p.bias_gelu_fusion);
  read_bool("te_op_fuser", p.te_op_fuser);
  p.lora_rank = r.optional_int("lora_rank", 0).value_or(p.lora_rank);
  p.cpu_offload_layers = r.optional_int("cpu_offload_layers", 0).value_or(p.cpu_offload_layers);
  if (auto v = r.optional_choice("fp8_recipe", {"delayed", "rowwise", "tensorwise", "blockwise"})) {
    p.fp8_recipe = parse_fp8_recipe(*v);
  }
  p.moe_imbalance = r.optional_number("moe_imbalance", 1.0).value_or(p.moe_imbalance);
  p.moe_capacity_factor = r.optional_number("moe_capacity_factor", 0.0).value_or(p.moe_capacity_factor);
  if (auto v = r.optional_choice("moe_dispatcher", {"alltoall", "allgather", "flex"})) p.moe_dispatcher = parse_moe_dispatcher(*v);
  p.ep_comm_overlap = r.optional_bool("ep_comm_overlap").value_or(p.ep_comm_overlap);
  note_default("host_stack");
  if (auto v = r.optional_choice("host_stack", {"pytorch", "transformer_engine"})) p.host_stack = parse_host_stack(*v);
  if (auto names = r.optional_string_list("cuda_graphs")) {
    try {
      p.cuda_graphs = parse_cuda_graphs(*names);
    } catch (const InputError& e) {
      r.add_problem("cuda_graphs", e.problems().front());
    }
  }
  return p;
}

namespace {
// The plan object of a file: the file itself, or the plan inside a trainsim output (its JSON pointer).
std::pair<const nlohmann::json*, std::string> plan_object(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string()) return {&doc, ""};
  const std::string schema = doc["schema"].get<std::string>();
  if (schema == "trainsim.search") {
    const auto plans = doc.find("plans");
    if (plans == doc.end() || !plans->is_array() || plans->empty() || !plans->front().contains("plan")) {
      throw InputError(path + ": /plans: this search output holds no plan (no plan was valid, or the file was cut)",
                       "run the search again, or give a plan JSON");
    }
    return {&plans->front()["plan"], "/plans/0/plan"};
  }
  if ((schema == "trainsim.prediction" || schema == "trainsim.model") && doc.contains("inputs") && doc["inputs"].contains("plan")) {
    return {&doc["inputs"]["plan"], "/inputs/plan"};
  }
  throw InputError(path + ": /schema: a " + schema + " file holds no plan",
                   "--plan reads a plan JSON, or the JSON output of trainsim search (its #1 plan), predict or model");
}
}  // namespace

ParallelPlan load_plan_file(const std::string& path, std::vector<std::string>* defaulted) {
  const nlohmann::json doc = load_json_file(path);
  ProblemList problems;
  const auto [plan_doc, pointer] = plan_object(doc, path);
  JsonObjectReader reader(*plan_doc, path, pointer, problems);
  ParallelPlan plan = read_plan(reader, ParallelPlan{}, defaulted);
  reader.reject_unknown_keys();
  problems.throw_if_any("plan keys: dp, tp, pp, cp, ep, expert_tp, vpp, first_stage_layers, last_stage_layers, pipeline_layout, micro_batch, global_batch, zero_stage, dp_shard, recompute, recompute_method, recompute_layers, recompute_modules, "
                        "sequence_parallel, schedule, precision, attention, cross_entropy, norm, cp_comm, dp_overlap, tp_overlap, tp_comm_overlap, zero3_collectives, zero_engine, deepspeed_reduce_bucket, deepspeed_prefetch_bucket, "
                        "deepspeed_contiguous_gradients, fp8_params, fp8_recipe, grad_reduce_in_fp32, torchao_float8, softmax_fusion, bias_gelu_fusion, te_op_fuser, lora_rank, cpu_offload_layers, "
                        "moe_imbalance, moe_capacity_factor, moe_dispatcher, ep_comm_overlap, host_stack, cuda_graphs");
  return plan;
}

void save_plan_json(const ParallelPlan& plan, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("--save-plan: cannot write " + path, "check that the folder exists and is writable");
  out << plan_to_json(plan).dump(2) << "\n";
  if (!out) throw InputError("--save-plan: writing " + path + " failed", "check the free space and the permissions");
}

nlohmann::ordered_json plan_to_json(const ParallelPlan& p) {
  nlohmann::ordered_json j;
  j["dp"] = p.dp;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["cp"] = p.cp;
  j["ep"] = p.ep;
  if (p.expert_tp > 0) j["expert_tp"] = p.expert_tp;
  j["vpp"] = p.vpp;
  if (p.first_stage_layers > 0) j["first_stage_layers"] = p.first_stage_layers;
  if (p.last_stage_layers > 0) j["last_stage_layers"] = p.last_stage_layers;
  if (!p.pipeline_layout.empty()) j["pipeline_layout"] = p.pipeline_layout;
  j["micro_batch"] = p.micro_batch;
  j["global_batch"] = p.global_batch;
  j["zero_stage"] = p.zero_stage;
  if (p.dp_shard > 0) j["dp_shard"] = p.dp_shard;
  j["recompute"] = to_string(p.recompute);
  if (p.recompute_method != RecomputeMethod::kUniform || p.recompute_layers != 1) {
    j["recompute_method"] = to_string(p.recompute_method);
    j["recompute_layers"] = p.recompute_layers;
  }
  if (p.recompute_modules != kDefaultRecomputeModules) j["recompute_modules"] = recompute_module_list(p.recompute_modules);
  j["sequence_parallel"] = p.sequence_parallel;
  j["schedule"] = to_string(p.schedule);
  j["precision"] = to_string(p.precision);
  j["attention"] = to_string(p.attention);
  j["cross_entropy"] = to_string(p.cross_entropy);
  j["norm"] = to_string(p.norm);
  if (p.cp > 1) j["cp_comm"] = to_string(p.cp_comm);
  j["dp_overlap"] = p.dp_overlap;
  j["tp_overlap"] = p.tp_overlap;
  if (p.tp_comm_overlap) j["tp_comm_overlap"] = true;
  if (p.zero_stage == 3 && p.zero3_collectives != Zero3Collectives::kPerLayer) j["zero3_collectives"] = to_string(p.zero3_collectives);
  if (p.zero_stage >= 1 && p.zero_engine != ZeroEngine::kMegatron) j["zero_engine"] = to_string(p.zero_engine);
  if (p.deepspeed_reduce_bucket != ParallelPlan{}.deepspeed_reduce_bucket) j["deepspeed_reduce_bucket"] = p.deepspeed_reduce_bucket;
  if (p.deepspeed_prefetch_bucket != ParallelPlan{}.deepspeed_prefetch_bucket) j["deepspeed_prefetch_bucket"] = p.deepspeed_prefetch_bucket;
  if (!p.deepspeed_contiguous_gradients) j["deepspeed_contiguous_gradients"] = false;
  if (p.fp8_params) j["fp8_params"] = true;
  if (!p.grad_reduce_in_fp32) j["grad_reduce_in_fp32"] = false;
  if (p.torchao_float8) j["torchao_float8"] = true;
  if (!p.softmax_fusion) j["softmax_fusion"] = false;
  if (!p.bias_gelu_fusion) j["bias_gelu_fusion"] = false;
  if (p.te_op_fuser) j["te_op_fuser"] = true;
  if (p.lora_rank > 0) j["lora_rank"] = p.lora_rank;
  if (p.cpu_offload_layers > 0) j["cpu_offload_layers"] = p.cpu_offload_layers;
  if (p.fp8_recipe != Fp8Recipe::kDelayed) j["fp8_recipe"] = to_string(p.fp8_recipe);
  if (p.moe_imbalance != 1.0) j["moe_imbalance"] = p.moe_imbalance;
  if (p.moe_capacity_factor > 0) j["moe_capacity_factor"] = p.moe_capacity_factor;
  if (p.moe_dispatcher != MoeDispatcher::kAllToAll) j["moe_dispatcher"] = to_string(p.moe_dispatcher);
  if (p.ep_comm_overlap) j["ep_comm_overlap"] = true;
  if (p.host_stack != HostStack::kTransformerEngine) j["host_stack"] = to_string(p.host_stack);
  if (p.cuda_graphs != 0) {
    nlohmann::json graphs = nlohmann::json::array();
    for (CudaGraphs flag = 1; flag <= kGraphFullIteration; flag <<= 1) {
      if ((p.cuda_graphs & flag) != 0) graphs.push_back(cuda_graphs_text(flag));
    }
    j["cuda_graphs"] = graphs;
  }
  return j;
}

}  // namespace trainsim
