// Our model JSON (the `model` block of published-run files, plus optional architecture fields)
// <-> ModelSpec. Fields a file leaves out take the documented defaults of its FFN family
// (docs/model-json.md); the resolved spec is echoed in every output's "inputs".
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "model/model_spec.hpp"

namespace trainsim {

class JsonObjectReader;

// Reads one model object; problems go to the reader's list (the caller throws).
ModelSpec read_model(JsonObjectReader& reader);
// Loads, validates and returns the model of a file; throws InputError listing every problem.
ModelSpec load_model_file(const std::string& path);
// The resolved spec, every field written out (so it reads back to the same spec).
nlohmann::ordered_json model_to_json(const ModelSpec& model);

}  // namespace trainsim
