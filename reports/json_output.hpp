// The envelope every JSON output starts with (INTERFACE.md): schema, schema_version, context
// (tool version, git revision, time, host) and the fully resolved inputs. Reading one of our own
// outputs back starts by checking that envelope (require_envelope).
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

namespace trainsim {

inline constexpr int kSchemaVersion = 1;

nlohmann::ordered_json json_envelope(const std::string& schema, nlohmann::ordered_json inputs);
void write_json(std::ostream& out, const nlohmann::ordered_json& doc);
// Throws InputError (naming the file and the key, with `hint`) unless `doc` is an object whose
// "schema" is `schema` and whose "schema_version" is kSchemaVersion.
void require_envelope(const nlohmann::json& doc, const std::string& file, const std::string& schema,
                      const std::string& hint);

}  // namespace trainsim
