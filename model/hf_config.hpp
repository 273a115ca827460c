// Hugging Face `config.json` -> ModelSpec, for the architectures whose parameter layout we know
// exactly: Llama, Mistral, Qwen2, Mixtral, GPT-2, GPT-NeoX. Other architectures are refused with
// the list of supported ones (a guessed layout would give wrong counts silently).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "model/model_spec.hpp"

namespace trainsim {

// True when the document looks like an HF config (has "model_type" or "architectures").
bool is_hf_config(const nlohmann::json& doc);
// Reads an HF config already parsed from `path`; throws InputError naming the file and key.
ModelSpec read_hf_config(const nlohmann::json& doc, const std::string& path);

}  // namespace trainsim
