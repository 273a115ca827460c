// `trainsim catalog`: the built-in models (GPUs, clusters and prices arrive with the simulator).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/app.hpp"
#include "cli/shared_options.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "model/param_count.hpp"
#include "reports/json_output.hpp"
#include "reports/text_table.hpp"

namespace trainsim {

namespace {
const char* const kNotBuilt = "GPUs, clusters and prices: not built yet (they arrive with the simulator, issue 3)";
}

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
              doc["not_built_yet"] = {"gpus", "clusters", "prices"};
              write_json(std::cout, doc);
              return 0;
            }
            TextTable t({{"model", TextTable::Align::kLeft}, {"params"}, {"layers"}, {"hidden"}, {"heads"},
                         {"kv"}, {"ffn"}, {"kind", TextTable::Align::kLeft}, {"vocab"}, {"seq"}});
            for (const auto& m : builtin_models()) {
              std::string kind = to_string(m.ffn_kind);
              if (m.moe) kind += " moe " + std::to_string(m.moe->experts) + "x top" + std::to_string(m.moe->top_k);
              t.add_row({m.name, format_si(static_cast<double>(count_params(m).total)), std::to_string(m.layers),
                         std::to_string(m.hidden), std::to_string(m.heads), std::to_string(m.kv_heads),
                         std::to_string(m.ffn_hidden), kind, std::to_string(m.vocab), std::to_string(m.seq_len)});
            }
            std::cout << "Models (`trainsim model --model NAME` for details)\n" << t.render() << "\n" << kNotBuilt << "\n";
            return 0;
          }};
}

}  // namespace trainsim
