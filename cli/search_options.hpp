// `search`'s options: the shared ones (model, hardware, --from, goodput, --format) and its own,
// bound to CLI11 into a SearchRequest (sim/search_request.hpp); and what the --from file fills in
// where they leave it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "cli/goodput_options.hpp"
#include "cli/import_options.hpp"
#include "cli/shared_options.hpp"
#include "sim/search_request.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace trainsim {

struct SearchCommandOptions {
  ModelOptions model;
  HardwareOptions hardware;
  FormatOption format;
  ImportOptions from;
  GoodputOptions goodput;
  SearchRequest request;
  int64_t top = 10;
  std::string export_to;
  std::string global_batch_tokens;  // --global-batch-tokens 4M
  std::map<std::string, CLI::Option*> options;
  void add_to(CLI::App& app);
  bool given(const std::string& name) const;
  // The request as parsed, with which of its options were given.
  SearchRequest parsed() const;
  // What the searched job is, where the flags leave it to the --from file: GPU count, global
  // batch, precision, CP exchange, MoE dispatcher, and (torchtitan) the framework and whether it
  // is compiled.
  void take_from_import(const ImportedJob& job);
};

}  // namespace trainsim
