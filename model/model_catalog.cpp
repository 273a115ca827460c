// Parses the embedded catalog once and resolves `--model` arguments.
#include "model/model_catalog.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/nearest_name.hpp"
#include "model/hf_config.hpp"
#include "model/model_json.hpp"

namespace trainsim {

extern const char* const kBuiltinModelsJson;  // generated from configs/models.json

namespace {

std::vector<ModelSpec> parse_catalog() {
  const std::string source = "configs/models.json (built in)";
  const nlohmann::json doc = parse_json_text(kBuiltinModelsJson, source);
  ProblemList problems;
  JsonObjectReader root(doc, source, "", problems);
  root.required_choice("schema", {"trainsim.model_catalog"});
  root.required_int("schema_version", 1);
  root.accept("note");
  std::vector<ModelSpec> models;
  if (doc.contains("models") && doc["models"].is_array()) {
    root.accept("models");
    for (size_t i = 0; i < doc["models"].size(); ++i) {
      JsonObjectReader entry(doc["models"][i], source, "/models/" + std::to_string(i), problems);
      models.push_back(read_model(entry));
      problems.add_all(validate_model(models.back(), source + " /models/" + std::to_string(i)));
    }
  } else {
    problems.add(source + ": /models: missing or not an array");
  }
  root.reject_unknown_keys();
  TRAINSIM_ASSERT(problems.empty(), "the built-in model catalog is invalid: " + join_names(problems.items(), "; "));
  return models;
}

}  // namespace

const std::vector<ModelSpec>& builtin_models() {
  static const std::vector<ModelSpec> models = parse_catalog();
  return models;
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& m : builtin_models()) names.push_back(m.name);
  return names;
}

ModelSpec resolve_model(const std::string& name_or_path, std::optional<int64_t> seq_len) {
  ModelSpec model;
  bool found = false;
  for (const auto& m : builtin_models()) {
    if (m.name == name_or_path) {
      model = m;
      found = true;
      break;
    }
  }
  std::string where = "built-in model \"" + name_or_path + "\"";
  if (!found) {
    const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                                 name_or_path.ends_with(".json") || std::filesystem::exists(name_or_path);
    if (!looks_like_path) {
      throw InputError("--model: unknown model \"" + name_or_path + "\"" +
                           did_you_mean(name_or_path, builtin_model_names()),
                       "built-in models: " + join_names(builtin_model_names()) +
                           "; or give the path of a model JSON or a Hugging Face config.json");
    }
    // A Hugging Face model folder (as downloaded) stands for its config.json.
    std::error_code error;
    const bool folder = std::filesystem::is_directory(name_or_path, error) &&
                        std::filesystem::is_regular_file(std::filesystem::path(name_or_path) / "config.json", error);
    const std::string path = folder ? (std::filesystem::path(name_or_path) / "config.json").string() : name_or_path;
    const nlohmann::json doc = load_json_file(path);
    model = is_hf_config(doc) ? read_hf_config(doc, path) : load_model_file(path);
    where = path;
  }
  if (seq_len) {
    model.seq_len = *seq_len;
    if (model.position != PositionKind::kLearned) model.max_positions = std::max(model.max_positions, *seq_len);
    ProblemList problems = validate_model(model, where + " with --seq-len " + std::to_string(*seq_len));
    problems.throw_if_any("choose a --seq-len the model supports");
  }
  return model;
}

}  // namespace trainsim
