// Provenance of an output: which trainsim (version, git revision) made it, when and where.
// Every JSON output carries it as its "context" block (INTERFACE.md).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace trainsim {

struct RunContext {
  std::string tool_version;
  std::string git_revision;  // "unknown" outside a git checkout; "-dirty" when it had changes
  std::string time_utc;      // ISO 8601
  std::string host;
};

RunContext capture_run_context();
nlohmann::ordered_json to_json(const RunContext& context);

// Version and revision baked in at build time.
const char* tool_version();
const char* git_revision();

}  // namespace trainsim
