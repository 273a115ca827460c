// Rendering of a Prediction.
#include "reports/prediction_report.hpp"
#include "sim/device_memory.hpp"

#include "common/units.hpp"
#include "model/model_json.hpp"
#include "plan/plan_json.hpp"
#include "plan/rank_memory.hpp"
#include "plan/recompute_span.hpp"
#include "reports/json_output.hpp"
#include "reports/op_category_json.hpp"
#include "reports/text_table.hpp"
#include "sim/hardware_json.hpp"

namespace trainsim {

namespace {

nlohmann::ordered_json hardware_json(const Hardware& hw) {
  nlohmann::ordered_json j;
  j["cluster"] = hw.cluster;
  j["gpus"] = hw.gpus;
  j["gpus_per_node"] = hw.gpus_per_node;
  j["inter_node_gbps_per_gpu"] = hw.inter_node_gbps_per_gpu;
  if (!hw.network_source.empty()) j["inter_node_gbps_source"] = hw.network_source;
  j["usd_per_gpu_hour"] = hw.usd_per_gpu_hour;
  j["gpu"] = gpu_to_json(hw.gpu);
  return j;
}

}  // namespace

nlohmann::ordered_json prediction_result_json(const Prediction& p) {
  nlohmann::ordered_json j;
  j["fits"] = p.fits;
  if (!p.fits) j["infeasible_reason"] = p.infeasible_reason;
  j["iteration_time_s"] = p.iteration_time_s;
  j["tokens_per_s"] = p.tokens_per_s;
  j["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
  j["model_tflops_per_gpu"] = p.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = p.hardware_tflops_per_gpu;
  j["mfu"] = p.mfu;
  j["hfu"] = p.hfu;
  const StageMemory& peak = p.memory.peak();
  j["memory_peak_gib"] = bytes_to_gib(peak.memory.total_bytes());
  j["memory_capacity_gib"] = p.memory_capacity_gib;
  j["memory_peak_stage"] = peak.stage;
  j["memory"] = {{"weights_gib", bytes_to_gib(peak.memory.weights_bytes)},
                 {"gradients_gib", bytes_to_gib(peak.memory.gradients_bytes)},
                 {"optimizer_gib", bytes_to_gib(peak.memory.optimizer_bytes)},
                 {"activations_gib", bytes_to_gib(peak.memory.activations_bytes)},
                 {"other_gib", bytes_to_gib(peak.memory.other_bytes)}};
  if (!p.hardware.is_host()) {  // a GPU: what the device reports besides the tensors
    const DeviceMemory& d = p.device.memory;
    j["memory_device_gib"] = bytes_to_gib(d.device_used_bytes);
    j["memory_reserved_gib"] = bytes_to_gib(d.reserved_bytes);
    j["memory_device_stage"] = p.device.stage;
    j["memory_device"] = {{"cuda_context_gib", bytes_to_gib(d.cuda_context_bytes)},
                          {"workspace_gib", bytes_to_gib(d.workspace_bytes)},
                          {"nccl_buffers_gib", bytes_to_gib(d.nccl_bytes)},
                          {"allocator_reserve_gib", bytes_to_gib(d.allocator_reserve_bytes)},
                          {"note", "on memory_device_stage: its tensors, the caching allocator's reserve (memory_reserved_gib, "
                                   "PyTorch's max_memory_reserved), then the CUDA context, cuBLAS workspace and NCCL buffers "
                                   "(memory_device_gib, nvidia-smi's figure; fits is judged on it). docs/cost-model.md \"Device memory\""}};
  }
  const PhaseBreakdown& b = p.breakdown;
  j["breakdown"] = {{"compute_s", b.compute_s},         {"tp_comm_exposed_s", b.tp_comm_exposed_s},
                    {"dp_comm_exposed_s", b.dp_comm_exposed_s}, {"pp_comm_exposed_s", b.pp_comm_exposed_s},
                    {"bubble_s", b.bubble_s},           {"optimizer_s", b.optimizer_s}};
  j["host"] = {{"stack", to_string(p.plan.host_stack)},
               {"cuda_graphs", cuda_graphs_text(p.plan.cuda_graphs)},
               {"idle_s", b.host_idle_s},
               {"ops_per_layer", {{"forward", p.layer_ops_forward}, {"backward", p.layer_ops_backward}, {"recompute", p.layer_ops_recompute}}},
               {"note", "idle_s: of breakdown.compute_s, the device waiting for the host to issue ops (docs/cost-model.md \"Host\")"}};
  j["critical_stage"] = p.critical_stage;
  j["cost"] = {{"usd_per_gpu_hour", p.hardware.usd_per_gpu_hour}, {"usd_per_iteration", p.usd_per_iteration}};
  return j;
}

nlohmann::ordered_json prediction_json(const Prediction& p, const BatchEcho* batch) {
  nlohmann::ordered_json inputs;
  inputs["model"] = model_to_json(p.model);
  inputs["hardware"] = hardware_json(p.hardware);
  inputs["plan"] = plan_to_json(p.plan);
  inputs["cost_model"] = p.cost_model;
  inputs["extrapolated"] = p.extrapolated;
  nlohmann::ordered_json doc = json_envelope("trainsim.prediction", inputs);
  const nlohmann::ordered_json result = prediction_result_json(p);
  for (const auto& [key, value] : result.items()) doc[key] = value;
  doc["batch"] = batch_echo_json(batch != nullptr ? *batch : make_batch_echo(p.model, p.plan, "", ""));
  if (!p.op_categories.empty()) {
    doc["op_categories"] = op_categories_json(p.op_categories);
    doc["op_categories_note"] = "per pipeline stage, one rank: seconds per iteration of each op category, every op priced "
                                "alone (the compute stream; a TP collective overlapped with a GEMM counts only its "
                                "exposed part)";
  }
  return doc;
}

std::string render_prediction_table(const Prediction& p, const BatchEcho* batch) {
  const ParallelPlan& plan = p.plan;
  std::string out = p.model.name + " on " + std::to_string(p.hardware.gpus) + " x " + p.hardware.gpu.name + " (" +
                    std::to_string(p.hardware.gpus_per_node) + " per node, " +
                    format_fixed(p.hardware.inter_node_gbps_per_gpu, 0) + " Gb/s per GPU across nodes" +
                    (p.hardware.network_source.empty() ? "" : ": " + p.hardware.network_source) + ")\n";
  out += "  plan: dp " + std::to_string(plan.dp) + " x tp " + std::to_string(plan.tp) + " x pp " + std::to_string(plan.pp) +
         (plan.cp > 1 ? " x cp " + std::to_string(plan.cp) : "") + (plan.vpp > 1 ? " (vpp " + std::to_string(plan.vpp) + ")" : "") + (plan.ep > 1 ? ", ep " + std::to_string(plan.ep) : "") + (p.model.moe && !plan.experts_like_dense() && plan.expert_tp_size() > 1 ? " x expert tp " + std::to_string(plan.expert_tp_size()) : "") + ", micro-batch " + std::to_string(plan.micro_batch) +
         " (" + count_micro_batches(plan.micro_batches()) + " per DP rank), " +
         to_string(plan.schedule) + ", ZeRO-" + std::to_string(plan.zero_stage) +
         (plan.zero_stage == 3 && plan.zero3_collectives == Zero3Collectives::kDeepSpeed ? " (DeepSpeed's per-module gathers)" : "") +
         (plan.zero_stage >= 1 && plan.zero_engine == ZeroEngine::kDeepSpeed
              ? " (DeepSpeed's gradient buckets: " + format_fixed(bytes_to_gib(deepspeed_bucket_bytes(plan)), 2) + " GiB)"
              : "") +
         (plan.zero_stage == 2 && plan.pp > 1 ? " (FSDP not resharded after forward, as ZeRO-3 with a pipeline)" : "") +
         (plan.shard_replicas() > 1 ? " sharded over " + std::to_string(plan.shard_ranks()) + " x " + std::to_string(plan.shard_replicas()) + " replicas" : "") + ", recompute " + describe_recompute(plan) +
         (plan.sequence_parallel ? ", SP" : "") + (plan.tp_comm_overlap ? ", TP comm overlap" : "") +
         (p.model.moe && plan.ep > 1 ? std::string(", ") + to_string(plan.moe_dispatcher) + " dispatcher" : "") +
         (plan.ep_comm_overlap ? ", EP comm overlap" : "") + ", " + to_string(plan.precision) +
         (plan.fp8_recipe != Fp8Recipe::kDelayed && plan.precision == Precision::kFp8 ? std::string(" (") + to_string(plan.fp8_recipe) + ")" : "") +
         ", " + to_string(plan.attention) + " attention" +
         (plan.cuda_graphs != 0 ? ", CUDA graphs " + cuda_graphs_text(plan.cuda_graphs) : "") +
         (plan.te_op_fuser ? ", TE op fuser" : "") +
         (plan.lora_rank > 0 ? ", LoRA rank " + std::to_string(plan.lora_rank) + " (base weights frozen)" : "") +
         (plan.cpu_offload_layers > 0 ? ", " + std::to_string(plan.cpu_offload_layers) + " layers' activations offloaded to the CPU" : "") +
         "\n  " + batch_echo_text(batch != nullptr ? *batch : make_batch_echo(p.model, p.plan, "", "")) + "\n";
  const std::string stage_layers = describe_stage_layers(p.model, plan);
  if (!stage_layers.empty()) out += "  layers per pipeline stage: " + stage_layers + "\n";
  out += "  cost model: " + p.cost_model + "\n";
  for (const std::string& e : p.extrapolated) out += "  EXTRAPOLATED: " + e + "\n";
  out += "\n";
  if (!p.fits) out += "  DOES NOT FIT: " + p.infeasible_reason + "\n\n";

  TextTable head({{"", TextTable::Align::kLeft}, {"value"}});
  head.add_row({"iteration time", format_fixed(p.iteration_time_s, 3) + " s"});
  head.add_row({"tokens/s", format_si(p.tokens_per_s) + " (" + format_fixed(p.tokens_per_s_per_gpu, 1) + " per GPU)"});
  const auto tflops = [](double x) { return format_fixed(x, x < 10 ? 4 : 1); };
  head.add_row({"model TFLOP/s per GPU", tflops(p.model_tflops_per_gpu) + " (MFU " + format_percent(p.mfu) + ")"});
  head.add_row({"hardware TFLOP/s per GPU", tflops(p.hardware_tflops_per_gpu) + " (HFU " + format_percent(p.hfu) + ")"});
  head.add_row({"memory peak per GPU", format_fixed(bytes_to_gib(p.memory.peak().memory.total_bytes()), 1) + " of " +
                                           format_fixed(p.memory_capacity_gib, 1) + " GiB (stage " +
                                           std::to_string(p.memory.peak_stage) + ")"});
  if (!p.hardware.is_host()) {
    // On the rank using the most: the allocator's reserve, then context, cuBLAS workspace, NCCL.
    const DeviceMemory& d = p.device.memory;
    head.add_row({"memory as the device reports",
                  format_fixed(bytes_to_gib(d.device_used_bytes), 1) + " of " + format_fixed(p.memory_capacity_gib, 1) +
                      " GiB (stage " + std::to_string(p.device.stage) + ": +" +
                      format_fixed(bytes_to_gib(d.allocator_reserve_bytes), 1) + " allocator reserve, +" +
                      format_fixed(bytes_to_gib(d.device_used_bytes - d.reserved_bytes), 2) + " CUDA/NCCL)"});
  }
  std::string cost = "$";  // built by appending: GCC 12 warns (-Wrestrict) on "$" + std::string
  cost.append(format_fixed(p.usd_per_iteration, 4)).append(" at $");
  cost.append(format_fixed(p.hardware.usd_per_gpu_hour, 2)).append("/GPU-hour");
  head.add_row({"cost per iteration", cost});
  out += head.render() + "\n";

  const PhaseBreakdown& b = p.breakdown;
  TextTable parts({{"where the time goes (stage " + std::to_string(p.critical_stage) + ")", TextTable::Align::kLeft},
                   {"seconds"}, {"share"}});
  const std::pair<const char*, double> rows[] = {{"compute", b.compute_s},
                                                 {plan.cp > 1 || plan.ep > 1 ? "TP/CP/EP communication (exposed)" : "TP communication (exposed)", b.tp_comm_exposed_s},
                                                 {"DP communication (exposed)", b.dp_comm_exposed_s},
                                                 {"PP communication (exposed)", b.pp_comm_exposed_s},
                                                 {"pipeline bubble", b.bubble_s},
                                                 {"optimizer step", b.optimizer_s}};
  for (const auto& [name, seconds] : rows) {
    parts.add_row({name, format_fixed(seconds, 3), format_percent(seconds / p.iteration_time_s)});
    if (seconds == b.compute_s && name == rows[0].first && b.host_idle_s > 0) {
      parts.add_row({"  of it, waiting for the host", format_fixed(b.host_idle_s, 3), format_percent(b.host_idle_s / p.iteration_time_s)});
    }
  }
  out += parts.render();
  return out;
}

}  // namespace trainsim
