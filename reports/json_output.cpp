// JSON envelope and writer.
#include "reports/json_output.hpp"

#include <ostream>

#include "common/errors.hpp"
#include "common/provenance.hpp"

namespace trainsim {

nlohmann::ordered_json json_envelope(const std::string& schema, nlohmann::ordered_json inputs) {
  nlohmann::ordered_json doc;
  doc["schema"] = schema;
  doc["schema_version"] = kSchemaVersion;
  doc["context"] = to_json(capture_run_context());
  doc["inputs"] = std::move(inputs);
  return doc;
}

void write_json(std::ostream& out, const nlohmann::ordered_json& doc) { out << doc.dump(2) << "\n"; }

void require_envelope(const nlohmann::json& doc, const std::string& file, const std::string& schema,
                      const std::string& hint) {
  if (!doc.is_object()) throw InputError(file + ": /: expected a JSON object, got a " + doc.type_name(), hint);
  const auto found = doc.find("schema");
  if (found == doc.end()) throw InputError(file + ": /schema: missing required key \"schema\" (\"" + schema + "\")", hint);
  if (!found->is_string() || found->get<std::string>() != schema) {
    throw InputError(file + ": /schema: expected \"" + schema + "\", got " + found->dump(), hint);
  }
  const auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int64_t>() != kSchemaVersion) {
    const std::string got = version == doc.end() ? "nothing" : version->dump();
    throw InputError(file + ": /schema_version: expected " + std::to_string(kSchemaVersion) + ", got " + got +
                         " (this trainsim reads schema_version " + std::to_string(kSchemaVersion) + ")",
                     hint);
  }
}

}  // namespace trainsim
