// Table and JSON rendering of a ModelReport.
#include "reports/model_report.hpp"

#include <set>

#include "common/units.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"
#include "plan/rank_memory.hpp"
#include "plan/recompute_span.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

ModelReport build_model_report(const ModelSpec& model, const ParallelPlan& plan, BatchEcho batch) {
  ModelReport r;
  r.batch = batch.seq_len > 0 ? std::move(batch) : make_batch_echo(model, plan, "", "");
  r.model = model;
  r.plan = plan;
  r.params = count_params(model);
  const int64_t recomputed = full_recompute_layers(model, plan);
  r.flops = flops_per_token(model, plan.recompute, recomputed, plan.recompute_modules);
  r.model_flops_per_iteration = model_flops_per_iteration(model, plan.global_batch);
  r.hardware_flops_per_iteration = hardware_flops_per_iteration(model, plan.global_batch, plan.recompute, recomputed, plan.recompute_modules);
  r.memory = estimate_rank_memory(model, plan);
  return r;
}

void add_device_fit(ModelReport& r, const Hardware& hardware, double allocator_reserve_fraction) {
  ModelReport::Fit fit;
  fit.gpu = hardware.gpu.name;
  fit.capacity_gib = bytes_to_gib(hardware.gpu.memory_bytes);
  r.memory = estimate_rank_memory(r.model, r.plan, memory_target(hardware));  // the GPU's FP8 copies
  fit.device = device_peak(r.memory, r.plan, hardware, allocator_reserve_fraction);
  fit.fits = bytes_to_gib(fit.device.memory.device_used_bytes) <= fit.capacity_gib;  // as the simulator's check_fit
  r.fit = fit;
}

namespace {

std::string gib(double bytes) { return format_fixed(bytes_to_gib(bytes), 2); }

std::string describe_model(const ModelSpec& m) {
  std::string text = m.name + ": " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
                     ", " + std::to_string(m.heads) + " heads";
  if (m.kv_heads != m.heads) text += " (" + std::to_string(m.kv_heads) + " KV)";
  text += " x " + std::to_string(m.head_dim) + ", FFN " + std::to_string(m.ffn_hidden) + " " + to_string(m.ffn_kind);
  if (m.moe) {
    text += ", " + std::to_string(m.moe->experts) + " experts (top " + std::to_string(m.moe->top_k) + ", FFN " +
            std::to_string(m.moe->expert_ffn_hidden) + ")";
    if (m.moe->dense_layers > 0) text += ", the first " + std::to_string(m.moe->dense_layers) + " layers dense";
  }
  if (m.mtp_layers > 0) {
    text += ", " + std::to_string(m.mtp_layers) + " multi-token-prediction depth" + (m.mtp_layers > 1 ? "s" : "") + " (--mtp-layers)";
  }
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    text += "\n  multi-head latent attention: Q " + (a.q_lora_rank > 0 ? "via rank " + std::to_string(a.q_lora_rank) : std::string("from hidden")) +
            ", K/V via rank " + std::to_string(a.kv_lora_rank) + ", QK heads " + std::to_string(a.qk_nope_head_dim) + " + " +
            std::to_string(a.qk_rope_head_dim) + " rope, V heads " + std::to_string(a.v_head_dim);
  }
  text += "\n  vocab " + std::to_string(m.vocab) + ", sequence " + std::to_string(m.seq_len) + ", " +
          to_string(m.norm) + ", " + to_string(m.position) + " positions, " +
          (m.tied_embeddings ? "tied" : "untied") + " embeddings, " +
          (m.linear_bias ? "linear biases" : m.qkv_bias ? "QKV biases only" : "no biases") +
          (m.dropout ? ", dropout" : ", no dropout");
  if (m.sliding_window > 0) {
    text += "\n  sliding-window attention: " + std::to_string(m.sliding_window) + " tokens in " + std::to_string(m.sliding_window_layers) +
            " of " + std::to_string(m.layers) + " layers" + (m.windowed_layers() == 0 ? " (the window covers the sequence: no effect)" : "");
  }
  if (!m.source.empty()) text += "\n  source: " + m.source;
  return text;
}

std::string describe_plan(const ParallelPlan& p, const BatchEcho& batch) {
  std::string text = "dp " + std::to_string(p.dp) + " x tp " + std::to_string(p.tp) + " x pp " + std::to_string(p.pp);
  if (p.cp > 1) text += " x cp " + std::to_string(p.cp);
  if (p.vpp > 1) text += " (vpp " + std::to_string(p.vpp) + ")";
  if (p.ep > 1) text += ", ep " + std::to_string(p.ep);
  if (p.expert_tp > 0) text += ", expert tp " + std::to_string(p.expert_tp);
  if (p.ep_comm_overlap) text += ", EP comm overlap";
  text += " = " + std::to_string(p.gpus()) + (p.gpus() == 1 ? " GPU" : " GPUs") + "; micro-batch " + std::to_string(p.micro_batch) + " (" +
          count_micro_batches(p.micro_batches()) + " per DP rank), " + to_string(p.schedule) + "\n  ZeRO-" + std::to_string(p.zero_stage) +
          ", recompute " + describe_recompute(p) + (p.sequence_parallel ? ", sequence parallel" : "") + ", " +
          to_string(p.precision) + ", " + to_string(p.attention) + " attention" +
          (p.lora_rank > 0 ? ", LoRA rank " + std::to_string(p.lora_rank) + " (base weights frozen)" : "") +
          (p.cpu_offload_layers > 0 ? ", " + std::to_string(p.cpu_offload_layers) + " layers' activations offloaded to the CPU" : "") +
          "\n  " + batch_echo_text(batch);
  return text;
}

// LoRA's adapter parameters over every TP rank (0 without LoRA).
int64_t lora_adapters(const ModelReport& r) {
  ParallelPlan whole = r.plan;
  whole.tp = 1;
  return lora_params_per_layer(r.model, whole) * r.model.layers;
}

std::string params_table(const ModelReport& r) {
  const ParamCounts& c = r.params;
  const double total = static_cast<double>(c.total);
  TextTable t({{"component", TextTable::Align::kLeft}, {"parameters"}, {"share"}});
  auto row = [&](const std::string& name, int64_t n) {
    if (n > 0) t.add_row({name, format_count(n), format_percent(static_cast<double>(n) / total)});
  };
  const int64_t layers = r.model.layers;
  const int64_t dense = r.model.moe ? r.model.moe->dense_layers : 0, sparse = layers - dense;
  row("token embedding", c.token_embedding);
  row("position embedding", c.position_embedding);
  row(std::string(r.model.mla ? "latent attention" : "attention") + " (" + std::to_string(layers) + " layers)", c.per_layer.attention * layers);
  if (dense > 0) row("dense mlp (" + std::to_string(dense) + " layers)", c.dense_layer.mlp * dense);
  row(std::string(r.model.moe ? "experts" : "mlp") + " (" + std::to_string(sparse) + " layers)", c.per_layer.mlp * sparse);
  if (c.per_layer.shared > 0) row("shared experts (" + std::to_string(sparse) + " layers)", c.per_layer.shared * sparse);
  row("router (" + std::to_string(sparse) + " layers)", c.per_layer.router * sparse);
  row("norms", c.per_layer.norms * layers + c.final_norm);
  row(r.model.tied_embeddings ? "lm head (tied)" : "lm head", c.lm_head);
  t.add_rule();
  t.add_row({"total", format_count(c.total), format_fixed(total / 1e9, 2) + " B"});
  if (r.model.moe) t.add_row({"active per token", format_count(c.active_per_token), ""});
  if (c.mtp > 0) {
    t.add_row({"multi-token prediction (" + std::to_string(r.model.mtp_layers) + (r.model.mtp_layers > 1 ? " depths" : " depth") +
                   "; beside the total)",
               format_count(c.mtp), format_percent(static_cast<double>(c.mtp) / total)});
  }
  if (r.plan.lora_rank > 0) {
    const int64_t adapters = lora_adapters(r);
    t.add_row({"LoRA adapters (rank " + std::to_string(r.plan.lora_rank) + "; what trains)", format_count(adapters),
               format_percent(static_cast<double>(adapters) / total)});
  }
  return t.render();
}

std::string flops_table(const ModelReport& r) {
  const double tokens = static_cast<double>(r.plan.global_batch) * static_cast<double>(r.model.seq_len);
  TextTable t({{"FLOPs", TextTable::Align::kLeft}, {"per token"}, {"per iteration"}});
  t.add_row({"forward", format_si(r.flops.forward()), format_si(r.flops.forward() * tokens)});
  t.add_row({"  of which attention (QK^T, AV)", format_si(r.flops.forward_attention),
             format_si(r.flops.forward_attention * tokens)});
  t.add_row({"model (forward + backward)", format_si(r.flops.model), format_si(r.model_flops_per_iteration)});
  t.add_row({"hardware (recompute " + describe_recompute(r.plan) + ")", format_si(r.flops.hardware),
             format_si(r.hardware_flops_per_iteration)});
  return t.render();
}

std::string memory_table(const ModelReport& r) {
  TextTable t({{"stage", TextTable::Align::kLeft}, {"layers"}, {"in flight"}, {"weights"}, {"grads"},
               {"optimizer"}, {"activations"}, {"other"}, {"total GiB"}});
  const auto& stages = r.memory.stages;
  std::set<int64_t> shown = {0, static_cast<int64_t>(stages.size()) - 1, r.memory.peak_stage};
  for (int64_t i : shown) {
    const StageMemory& s = stages[static_cast<size_t>(i)];
    std::string name = std::to_string(s.stage);
    if (s.stage == 0 && stages.size() > 1) name += " (first)";
    else if (s.stage + 1 == static_cast<int64_t>(stages.size()) && stages.size() > 1) name += " (last)";
    if (s.stage == r.memory.peak_stage) name += " peak";
    t.add_row({name, std::to_string(s.layers), format_fixed(s.in_flight_micro_batches, 2), gib(s.memory.weights_bytes),
               gib(s.memory.gradients_bytes), gib(s.memory.optimizer_bytes), gib(s.memory.activations_bytes),
               gib(s.memory.other_bytes), gib(s.memory.total_bytes())});
  }
  return t.render();
}

// "on h100-sxm-80gb (80.0 GiB): fits, 71.2 GiB as the device reports on stage 1 (...)".
std::string fit_text(const ModelReport& r) {
  const DeviceMemory& d = r.fit->device.memory;
  return "  on " + r.fit->gpu + " (" + format_fixed(r.fit->capacity_gib, 1) + " GiB): " + (r.fit->fits ? "fits" : "DOES NOT FIT") +
         ", " + format_fixed(bytes_to_gib(d.device_used_bytes), 1) + " GiB as the device reports on stage " +
         std::to_string(r.fit->device.stage) + " (" + gib(d.allocated_bytes) + " of tensors, +" +
         gib(d.allocator_reserve_bytes) + " allocator reserve, +" + gib(d.device_used_bytes - d.reserved_bytes) +
         " CUDA context, workspace and NCCL buffers; docs/cost-model.md \"Device memory\")\n";
}

nlohmann::ordered_json memory_json(const MemoryBreakdown& m) {
  nlohmann::ordered_json j;
  j["weights_gib"] = bytes_to_gib(m.weights_bytes);
  j["gradients_gib"] = bytes_to_gib(m.gradients_bytes);
  j["optimizer_gib"] = bytes_to_gib(m.optimizer_bytes);
  j["activations_gib"] = bytes_to_gib(m.activations_bytes);
  j["other_gib"] = bytes_to_gib(m.other_bytes);
  j["total_gib"] = bytes_to_gib(m.total_bytes());
  return j;
}

}  // namespace

std::string render_model_table(const ModelReport& r) {
  std::string out = describe_model(r.model) + "\n\nParameters\n" + params_table(r);
  out += "\nFLOPs (sequence " + std::to_string(r.model.seq_len) + ", global batch " +
         std::to_string(r.plan.global_batch) + "; docs/model-math.md)\n" + flops_table(r);
  out += "\nMemory per GPU, GiB\n  " + describe_plan(r.plan, r.batch) + "\n" + memory_table(r);
  if (!r.fit) {
    out += "  tensors only: NCCL and DP bucket buffers, CUDA context, allocator fragmentation not included "
           "(--gpu NAME adds them and says whether it fits)\n";
    return out;
  }
  return out + fit_text(r);
}

nlohmann::ordered_json model_report_json(const ModelReport& r) {
  nlohmann::ordered_json inputs;
  inputs["model"] = model_to_json(r.model);
  inputs["plan"] = plan_to_json(r.plan);
  nlohmann::ordered_json doc = json_envelope("trainsim.model", inputs);
  const ParamCounts& c = r.params;
  nlohmann::ordered_json params;
  params["total"] = c.total;
  params["active_per_token"] = c.active_per_token;
  params["matmul_active"] = c.matmul_active;
  params["token_embedding"] = c.token_embedding;
  params["position_embedding"] = c.position_embedding;
  params["final_norm"] = c.final_norm;
  params["lm_head"] = c.lm_head;
  if (c.mtp > 0) params["mtp"] = c.mtp;  // the multi-token-prediction depths, outside "total"
  params["per_layer"] = {{"attention", c.per_layer.attention}, {"mlp", c.per_layer.mlp}, {"shared_experts", c.per_layer.shared},
                         {"router", c.per_layer.router},       {"norms", c.per_layer.norms},
                         {"total", c.per_layer.total()}};
  if (r.plan.lora_rank > 0) params["lora_adapters"] = lora_adapters(r);  // what trains under LoRA
  doc["params"] = params;
  doc["params_b"] = static_cast<double>(c.total) / 1e9;
  nlohmann::ordered_json flops;
  flops["per_token"] = {{"forward", r.flops.forward()},
                        {"forward_attention", r.flops.forward_attention},
                        {"forward_lm_head", r.flops.forward_lm_head},
                        {"model", r.flops.model},
                        {"hardware", r.flops.hardware}};
  flops["per_iteration"] = {{"model", r.model_flops_per_iteration}, {"hardware", r.hardware_flops_per_iteration}};
  doc["flops"] = flops;
  const StageMemory& peak = r.memory.peak();
  doc["memory_peak_gib"] = bytes_to_gib(peak.memory.total_bytes());
  doc["memory_peak_stage"] = peak.stage;
  doc["memory"] = memory_json(peak.memory);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto& s : r.memory.stages) {
    nlohmann::ordered_json j;
    j["stage"] = s.stage;
    j["layers"] = s.layers;
    j["params"] = s.params;
    j["in_flight_micro_batches"] = s.in_flight_micro_batches;
    j["memory"] = memory_json(s.memory);
    stages.push_back(j);
  }
  doc["memory_stages"] = stages;
  doc["batch"] = batch_echo_json(r.batch);
  if (r.fit) {
    doc["fits"] = r.fit->fits;
    doc["memory_capacity_gib"] = r.fit->capacity_gib;
    doc["memory_device_gib"] = bytes_to_gib(r.fit->device.memory.device_used_bytes);
    doc["memory_device_stage"] = r.fit->device.stage;
    doc["gpu"] = r.fit->gpu;
  }
  return doc;
}

}  // namespace trainsim
