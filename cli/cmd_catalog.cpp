// `trainsim catalog`: the built-in models, GPUs (peaks, memory, bandwidths, reference prices) and
// cluster presets, as tables or as JSON (`--format json`, which also carries every figure's source).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "common/units.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "model/param_count.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"
#include "sim/hardware_catalog.hpp"
#include "sim/hardware_json.hpp"

namespace trainsim {

namespace {

const char* const kHardwareNotes =
    "Peaks are dense tensor-core TFLOP/s (no sparsity); NVLink is per GPU, per direction (on AMD parts the sum of\n"
    "its 7 Infinity Fabric links: a full mesh, where a group of g GPUs uses g - 1 of them); inter-node is the NIC\n"
    "line rate per GPU. Prices are reference on-demand rates, not quotes: override them with --price.\n"
    "`trainsim catalog --format json` gives the source of every figure.";

std::string models_table() {
  TextTable t({{"model", TextTable::Align::kLeft}, {"params"}, {"layers"}, {"hidden"}, {"heads"},
               {"kv"}, {"ffn"}, {"kind", TextTable::Align::kLeft}, {"vocab"}, {"seq"}});
  for (const auto& m : builtin_models()) {
    std::string kind = to_string(m.ffn_kind);
    if (m.moe) kind += " moe " + std::to_string(m.moe->experts) + "x top" + std::to_string(m.moe->top_k);
    t.add_row({m.name, format_si(static_cast<double>(count_params(m).total)), std::to_string(m.layers),
               std::to_string(m.hidden), std::to_string(m.heads), std::to_string(m.kv_heads),
               std::to_string(m.ffn_hidden), kind, std::to_string(m.vocab), std::to_string(m.seq_len)});
  }
  return t.render();
}

std::string gpus_table() {
  TextTable t({{"gpu", TextTable::Align::kLeft}, {"generation", TextTable::Align::kLeft}, {"bf16 TFLOP/s"}, {"fp8 TFLOP/s"}, {"fp4 TFLOP/s"}, {"memory GiB"}, {"HBM TB/s"},
               {"NVLink GB/s"}, {"SMs"}, {"$/GPU-hour"}});
  for (const auto& g : builtin_gpus()) {
    const auto peak = [](double flops_per_s) { return flops_per_s > 0 ? format_fixed(flops_per_s_to_tflops(flops_per_s), 1) : "-"; };
    t.add_row({g.name, to_string(g.capabilities.generation), peak(g.peak_bf16_flops_per_s), peak(g.peak_fp8_flops_per_s), peak(g.peak_fp4_flops_per_s),
               format_fixed(bytes_to_gib(g.memory_bytes), 1),
               format_fixed(bytes_per_s_to_tb_per_s(g.memory_bandwidth_bytes_per_s), 3),
               format_fixed(bytes_per_s_to_gb_per_s(g.nvlink_bandwidth_bytes_per_s), 0), std::to_string(g.sm_count),
               format_fixed(g.usd_per_gpu_hour, 2)});
  }
  return t.render();
}

std::string clusters_table() {
  TextTable t({{"cluster", TextTable::Align::kLeft}, {"gpu", TextTable::Align::kLeft}, {"GPUs/node"},
               {"inter-node Gb/s per GPU"}});
  for (const auto& c : builtin_clusters()) {
    t.add_row({c.name, c.gpu, std::to_string(c.gpus_per_node), format_fixed(c.inter_node_gbps_per_gpu, 0)});
  }
  return t.render();
}

}  // namespace

Command add_catalog_command(CLI::App& root) {
  auto format = std::make_shared<FormatOption>();
  CLI::App* app = root.add_subcommand("catalog", "list built-in models, GPUs, clusters and prices");
  format->add_to(*app);
  return {app, [format]() {
            if (format->value() == OutputFormat::kJson) {
              nlohmann::ordered_json doc = json_envelope("trainsim.catalog", nlohmann::ordered_json::object());
              nlohmann::ordered_json models = nlohmann::ordered_json::array();
              for (const auto& m : builtin_models()) {
                nlohmann::ordered_json j = model_to_json(m);
                j["params"] = count_params(m).total;
                models.push_back(j);
              }
              doc["models"] = models;
              nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
              for (const auto& g : builtin_gpus()) gpus.push_back(gpu_catalog_entry_to_json(g));  // with its capabilities
              doc["gpus"] = gpus;
              nlohmann::ordered_json clusters = nlohmann::ordered_json::array();
              for (const auto& c : builtin_clusters()) clusters.push_back(cluster_to_json(c));
              doc["clusters"] = clusters;
              write_json(std::cout, doc);
              return 0;
            }
            // Rendered before printing, so a broken catalog prints nothing but the error.
            const std::string models = models_table(), gpus = gpus_table(), clusters = clusters_table();
            std::cout << "Models (`trainsim model --model NAME` for details)\n"
                      << models << "\nGPUs (`--gpu NAME`)\n"
                      << gpus << "\nClusters (`--cluster NAME`)\n"
                      << clusters << "\n" << kHardwareNotes << "\n";
            return 0;
          }};
}

}  // namespace trainsim
