// The plan's choices as text (the names plan JSON, the flags and the reports use) and the bytes
// a quantized linear keeps of its input (plan/parallel_plan.hpp).
#include <string>
#include <utility>

#include "plan/parallel_plan.hpp"

namespace trainsim {

const char* to_string(Schedule schedule) {
  switch (schedule) {
    case Schedule::kGpipe: return "gpipe";
    case Schedule::k1F1B: return "1f1b";
    case Schedule::kInterleaved: return "interleaved";
    case Schedule::kZeroBubble1p: return "zb-1p";
    case Schedule::kZeroBubble2p: return "zb-2p";
    case Schedule::kZeroBubbleV: return "zb-v";
  }
  return "?";
}

const char* to_string(NormKernel n) { return n == NormKernel::kEager ? "eager" : "fused"; }

const char* to_string(RecomputeMethod r) {
  return r == RecomputeMethod::kBlock ? "block" : r == RecomputeMethod::kEvery ? "every" : "uniform";
}

double quantized_input_bytes(const ParallelPlan& p) {
  switch (p.precision) {
    case Precision::kMxfp8: return 1.0 + 1.0 / 32.0;
    case Precision::kNvfp4: return 0.5 + 1.0 / 16.0;
    case Precision::kFp8:
      if (p.torchao_float8 || p.fp8_recipe == Fp8Recipe::kRowwise) return 0.0;
      return p.fp8_recipe == Fp8Recipe::kBlockwise ? 1.0 + 4.0 / 128.0 : 1.0;
    default: return 0.0;
  }
}

bool eager_glu_clamp(const ModelSpec& m, const ParallelPlan& p) {
  return m.moe && m.glu_clamp > 0 && m.ffn_kind == FfnKind::kSwiglu && p.host_stack == HostStack::kTransformerEngine && !p.te_op_fuser;
}

const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kRowwise: return "rowwise";
    case Fp8Recipe::kTensorwise: return "tensorwise";
    case Fp8Recipe::kBlockwise: return "blockwise";
    case Fp8Recipe::kDelayed: break;
  }
  return "delayed";
}
const char* to_string(HostStack stack) { return stack == HostStack::kTransformerEngine ? "transformer_engine" : "pytorch"; }

namespace {
constexpr std::pair<const char*, CudaGraphs> kCudaGraphScopes[] = {
    {"attn", kGraphAttn}, {"mlp", kGraphMlp}, {"moe_router", kGraphMoeRouter}, {"moe_preprocess", kGraphMoePreprocess},
    {"moe", kGraphMoe},   {"layer", kGraphLayer}, {"full_iteration", kGraphFullIteration}};
}  // namespace

std::string cuda_graphs_text(CudaGraphs graphs) {
  std::string out;
  for (const auto& [name, flag] : kCudaGraphScopes) {
    if ((graphs & flag) == 0) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out;
}

CudaGraphs cuda_graph_flag(const std::string& name) {
  for (const auto& [scope, flag] : kCudaGraphScopes) {
    if (name == scope) return flag;
  }
  return 0;
}

const char* cuda_graph_names() { return "attn, mlp, moe_router, moe_preprocess, moe, layer, full_iteration"; }

const char* to_string(MoeDispatcher d) {
  return d == MoeDispatcher::kAllGather ? "allgather" : d == MoeDispatcher::kFlex ? "flex" : "alltoall";
}

const char* to_string(Zero3Collectives z) { return z == Zero3Collectives::kDeepSpeed ? "deepspeed" : "per_layer"; }
const char* to_string(ZeroEngine z) { return z == ZeroEngine::kDeepSpeed ? "deepspeed" : "megatron"; }

const char* to_string(CpComm c) { return c == CpComm::kAllGather ? "all_gather" : c == CpComm::kA2a ? "a2a" : "p2p"; }

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp32: return "fp32";
    case Precision::kFp8: return "fp8";
    case Precision::kMxfp8: return "mxfp8";
    case Precision::kNvfp4: return "nvfp4";
  }
  return "?";
}

}  // namespace trainsim
