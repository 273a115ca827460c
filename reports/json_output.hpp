// The envelope every JSON output starts with (INTERFACE.md): schema, schema_version, context
// (tool version, git revision, time, host) and the fully resolved inputs.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

namespace trainsim {

inline constexpr int kSchemaVersion = 1;

nlohmann::ordered_json json_envelope(const std::string& schema, nlohmann::ordered_json inputs);
void write_json(std::ostream& out, const nlohmann::ordered_json& doc);

}  // namespace trainsim
