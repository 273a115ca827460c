// cuDNN fused attention with and without GPT-OSS's learnable sinks, forward and backward, at the
// shapes the published GPT-OSS-120B runs use (64 query / 8 KV heads of 64, 4,096 tokens, full causal
// and a 128-token sliding window), beside Llama 3.1's 128-wide heads as the anchor trainsim's
// attention rate is measured at. For a GPU session (docs/gpu-session.md "Attention with sinks"):
// Transformer Engine runs GPT-OSS's attention through exactly this cuDNN graph (softmax_type
// "learnable": cuDNN 9.13.1 or newer), and no public table times it; issue 38/39's GPT-OSS rows are
// predicted 25-47% too fast and its cost is the open candidate.
//
// Build (cudnn-frontend is header-only and not part of this repository: pass its include folder):
//   bench/cudnn_sink_attention.sh FRONTEND_INCLUDE_DIR [OUT_BINARY]
// Prints one JSON object per case: milliseconds (median of 20 after 5 warm-ups) and TFLOP/s with
// cudnn-frontend's own FLOP count (the unmasked score elements; backward 5 products against 2).
#include <cuda_runtime_api.h>
#include <cudnn_frontend.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace fe = cudnn_frontend;

namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

bool fe_ok(fe::error_t e, const std::string& what, std::string& why) {
  if (e.is_good()) return true;
  why = what + ": " + e.get_message();
  return false;
}

struct Case {
  const char* name;
  int64_t b, h_q, h_kv, s, d;
  int64_t window;  // keys each query sees, itself included; 0: full causal
  bool sink;
};

// Megatron-Core's layout for Transformer Engine (sbhd): dims (b, h, s, d) over an s, b, h, d buffer.
std::vector<int64_t> sbhd_strides(int64_t b, int64_t h, int64_t d) { return {h * d, d, b * h * d, 1}; }

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kSink, kDo, kDq, kDk, kDv, kDsink };

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& g, const char* name, int64_t uid, std::vector<int64_t> dim,
                                                    std::vector<int64_t> stride) {
  return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dim).set_stride(stride));
}

using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;
std::tuple<TensorPtr, TensorPtr, TensorPtr> qkv(fe::graph::Graph& g, const Case& c) {
  return {input(g, "Q", kQ, {c.b, c.h_q, c.s, c.d}, sbhd_strides(c.b, c.h_q, c.d)),
          input(g, "K", kK, {c.b, c.h_kv, c.s, c.d}, sbhd_strides(c.b, c.h_kv, c.d)),
          input(g, "V", kV, {c.b, c.h_kv, c.s, c.d}, sbhd_strides(c.b, c.h_kv, c.d))};
}

template <typename Options>
void mask(Options& o, const Case& c) {
  o.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
  if (c.window > 0) o.set_diagonal_band_left_bound(static_cast<int>(c.window));
}

std::shared_ptr<fe::graph::Graph> new_graph() {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16).set_intermediate_data_type(fe::DataType_t::FLOAT).set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

std::shared_ptr<fe::graph::Graph> forward_graph(const Case& c) {
  auto g = new_graph();
  const auto [q, k, v] = qkv(*g, c);
  auto o = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(true).set_attn_scale(1.0f / std::sqrt(static_cast<float>(c.d)));
  mask(o, c);
  if (c.sink) {
    o.set_sink_token(g->tensor(fe::graph::Tensor_attributes().set_name("sink").set_uid(kSink).set_dim({1, c.h_q, 1, 1}).set_stride({c.h_q, 1, 1, 1}).set_data_type(fe::DataType_t::FLOAT)));
  }
  auto [out, stats] = g->sdpa(q, k, v, o);
  out->set_output(true).set_uid(kO).set_dim({c.b, c.h_q, c.s, c.d}).set_stride(sbhd_strides(c.b, c.h_q, c.d));
  stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT);
  return g;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const Case& c) {
  auto g = new_graph();
  const auto [q, k, v] = qkv(*g, c);
  auto o = input(*g, "O", kO, {c.b, c.h_q, c.s, c.d}, sbhd_strides(c.b, c.h_q, c.d));
  auto d_o = input(*g, "dO", kDo, {c.b, c.h_q, c.s, c.d}, sbhd_strides(c.b, c.h_q, c.d));
  auto stats = g->tensor(fe::graph::Tensor_attributes().set_name("Stats").set_uid(kStats).set_dim({c.b, c.h_q, c.s, 1}).set_stride({c.h_q * c.s, c.s, 1, 1}).set_data_type(fe::DataType_t::FLOAT));
  auto opt = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(1.0f / std::sqrt(static_cast<float>(c.d)));
  mask(opt, c);
  if (c.sink) {
    const auto scalar = [&](const char* name, int64_t uid) {
      return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({1, c.h_q, 1, 1}).set_stride({c.h_q, 1, 1, 1}).set_data_type(fe::DataType_t::FLOAT));
    };
    opt.set_sink_token(scalar("sink", kSink)).set_dsink_token(scalar("dsink", kDsink));
  }
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, d_o, stats, opt);
  dq->set_output(true).set_uid(kDq).set_dim({c.b, c.h_q, c.s, c.d}).set_stride(sbhd_strides(c.b, c.h_q, c.d));
  dk->set_output(true).set_uid(kDk).set_dim({c.b, c.h_kv, c.s, c.d}).set_stride(sbhd_strides(c.b, c.h_kv, c.d));
  dv->set_output(true).set_uid(kDv).set_dim({c.b, c.h_kv, c.s, c.d}).set_stride(sbhd_strides(c.b, c.h_kv, c.d));
  return g;
}

bool build(fe::graph::Graph& g, cudnnHandle_t handle, std::string& why) {
  return fe_ok(g.validate(), "validate", why) && fe_ok(g.build_operation_graph(handle), "build_operation_graph", why) &&
         fe_ok(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans", why) && fe_ok(g.check_support(), "check_support", why) &&
         fe_ok(g.build_plans(), "build_plans", why);
}

// Median milliseconds of one execution over 20 timed runs after 5 warm-ups.
double time_ms(fe::graph::Graph& g, cudnnHandle_t handle, std::unordered_map<int64_t, void*>& pack, void* workspace, std::string& why) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms;
  for (int i = 0; i < 25; ++i) {
    cuda_check(cudaEventRecord(start), "cudaEventRecord");
    if (!fe_ok(g.execute(handle, pack, workspace), "execute", why)) return -1;
    cuda_check(cudaEventRecord(stop), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= 5) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

// Unmasked score elements per head, as cudnn-frontend's benchmark counts them.
double unmasked(const Case& c) {
  const double s = static_cast<double>(c.s), w = static_cast<double>(c.window);
  if (c.window <= 0 || c.window >= c.s) return s * (s + 1) / 2;
  return w * (w + 1) / 2 + (s - w) * w;
}

void run(const Case& c, cudnnHandle_t handle) {
  const size_t q_bytes = static_cast<size_t>(c.b * c.h_q * c.s * c.d) * 2, kv_bytes = static_cast<size_t>(c.b * c.h_kv * c.s * c.d) * 2;
  const size_t stats_bytes = static_cast<size_t>(c.b * c.h_q * c.s) * 4, sink_bytes = static_cast<size_t>(c.h_q) * 4;
  std::unordered_map<int64_t, size_t> sizes = {{kQ, q_bytes}, {kK, kv_bytes}, {kV, kv_bytes}, {kO, q_bytes}, {kStats, stats_bytes},
                                               {kDo, q_bytes}, {kDq, q_bytes}, {kDk, kv_bytes}, {kDv, kv_bytes}};
  if (c.sink) {
    sizes[kSink] = sink_bytes;
    sizes[kDsink] = sink_bytes;
  }
  std::unordered_map<int64_t, void*> buffers;
  for (const auto& [uid, bytes] : sizes) {
    cuda_check(cudaMalloc(&buffers[uid], bytes), "cudaMalloc");
    cuda_check(cudaMemset(buffers[uid], 0x3c, bytes), "cudaMemset");  // 0x3c3c: a small bf16 value everywhere
  }
  std::string why;
  double fwd = -1, bwd = -1;
  auto f = forward_graph(c);
  auto b = backward_graph(c);
  if (build(*f, handle, why) && build(*b, handle, why)) {
    int64_t ws = std::max(f->get_workspace_size(), b->get_workspace_size());
    void* workspace = nullptr;
    if (ws > 0) cuda_check(cudaMalloc(&workspace, static_cast<size_t>(ws)), "cudaMalloc workspace");
    std::unordered_map<int64_t, void*> fpack = {{kQ, buffers[kQ]}, {kK, buffers[kK]}, {kV, buffers[kV]}, {kO, buffers[kO]}, {kStats, buffers[kStats]}};
    std::unordered_map<int64_t, void*> bpack = {{kQ, buffers[kQ]},   {kK, buffers[kK]},   {kV, buffers[kV]},   {kO, buffers[kO]}, {kDo, buffers[kDo]},
                                                {kStats, buffers[kStats]}, {kDq, buffers[kDq]}, {kDk, buffers[kDk]}, {kDv, buffers[kDv]}};
    if (c.sink) {
      fpack[kSink] = bpack[kSink] = buffers[kSink];
      bpack[kDsink] = buffers[kDsink];
    }
    fwd = time_ms(*f, handle, fpack, workspace, why);
    if (fwd > 0) bwd = time_ms(*b, handle, bpack, workspace, why);
    if (workspace != nullptr) cudaFree(workspace);
  }
  for (auto& [uid, p] : buffers) cudaFree(p);
  const double products = static_cast<double>(c.b * c.h_q) * unmasked(c) * 2.0 * static_cast<double>(c.d);
  const double fwd_flops = products * 2.0, bwd_flops = products * 5.0;
  std::printf("{\"case\": \"%s\", \"batch\": %lld, \"heads_q\": %lld, \"heads_kv\": %lld, \"seq\": %lld, \"head_dim\": %lld, \"window\": %lld, "
              "\"sink\": %s, \"cudnn\": %zu, \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, \"fwd_tflops\": %.1f, \"bwd_tflops\": %.1f%s%s%s}\n",
              c.name, static_cast<long long>(c.b), static_cast<long long>(c.h_q), static_cast<long long>(c.h_kv), static_cast<long long>(c.s),
              static_cast<long long>(c.d), static_cast<long long>(c.window), c.sink ? "true" : "false", cudnnGetVersion(), fwd, bwd,
              fwd > 0 ? fwd_flops / (fwd * 1e9) : 0.0, bwd > 0 ? bwd_flops / (bwd * 1e9) : 0.0, why.empty() ? "" : ", \"error\": \"",
              why.c_str(), why.empty() ? "" : "\"");
  std::fflush(stdout);
}

}  // namespace

int main() {
  cudnnHandle_t handle;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "error: cudnnCreate failed (no GPU, or no cuDNN library on the loader path)\n");
    return 1;
  }
  // GPT-OSS-120B: 64 query / 8 KV heads of 64; every other layer a 128-token window. Micro-batch 1
  // (the H100 rows) and 4 (the Blackwell rows). Llama 3.1's shape is the anchor of trainsim's rate.
  const Case cases[] = {
      {"llama3.1-anchor", 2, 64, 8, 4096, 128, 0, false},
      {"gpt-oss-full", 1, 64, 8, 4096, 64, 0, false},
      {"gpt-oss-full-sink", 1, 64, 8, 4096, 64, 0, true},
      {"gpt-oss-window128", 1, 64, 8, 4096, 64, 128, false},
      {"gpt-oss-window128-sink", 1, 64, 8, 4096, 64, 128, true},
      {"gpt-oss-full", 4, 64, 8, 4096, 64, 0, false},
      {"gpt-oss-full-sink", 4, 64, 8, 4096, 64, 0, true},
      {"gpt-oss-window128", 4, 64, 8, 4096, 64, 128, false},
      {"gpt-oss-window128-sink", 4, 64, 8, 4096, 64, 128, true},
  };
  for (const Case& c : cases) run(c, handle);
  cudnnDestroy(handle);
  return 0;
}
