// The built-in models (configs/models.json, compiled into the binary) and `--model` resolution:
// a catalog name, a path to our model JSON, or a path to a Hugging Face config.json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.hpp"

namespace trainsim {

const std::vector<ModelSpec>& builtin_models();
std::vector<std::string> builtin_model_names();

// `name_or_path`: a built-in name, or a file (our JSON or HF config.json). `seq_len` overrides the
// model's sequence length. Throws InputError (unknown name with suggestion, bad file, bad value).
ModelSpec resolve_model(const std::string& name_or_path, std::optional<int64_t> seq_len = std::nullopt);

}  // namespace trainsim
