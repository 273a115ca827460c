// A profiler trace's kernels in trainsim's op vocabulary (see interop/trace_measurement.hpp):
// by kernel name, and a GEMM's role by the shapes its launching CPU op recorded.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "interop/kineto_summary.hpp"
#include "interop/trace_measurement.hpp"

namespace trainsim {
namespace {

std::string lower(const std::string& s) {
  std::string n(s.size(), ' ');
  std::transform(s.begin(), s.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  return n;
}

bool has(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

}  // namespace

OpCategory gemm_role(const TraceCpuOp& op, const TracePlanGroups& groups, bool backward, bool* q_or_proj) {
  *q_or_proj = false;
  const TraceModelWidths& m = groups.model;
  if (!m.stated) return OpCategory::kGemmOther;
  const bool linear = op.name == "aten::linear";
  if (!(linear || op.name == "aten::mm" || op.name == "aten::addmm" || op.name == "aten::matmul")) return OpCategory::kGemmOther;
  // The first two arguments with at least two dimensions: the activation (or gradient) and the weight.
  std::vector<const std::vector<int64_t>*> mats;
  for (const std::vector<int64_t>& d : op.input_dims) {
    if (d.size() >= 2) mats.push_back(&d);
    if (mats.size() == 2) break;
  }
  if (mats.size() < 2 || mats[1]->size() != 2) return OpCategory::kGemmOther;
  const std::vector<int64_t>& a = *mats[0];
  const std::vector<int64_t>& b = *mats[1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < a.size(); ++i) rows *= a[i];
  const std::array<int64_t, 3> dims = {rows, a.back(), linear ? b[0] : b[1]};
  // Where (out, in) sit among (M, K, N): the forward is x[M, in] . W^T[in, out] (K = in, N = out;
  // aten::linear's weight is [out, in]); the input gradient g[M, out] . W[out, in] (K = out, N = in)
  // and the weight gradient g^T[out, M] . x[M, in] (M = out, N = in).
  auto fits = [&dims, backward](int64_t out, int64_t in) {
    if (out <= 0 || in <= 0) return false;
    const auto [M, K, N] = dims;
    return backward ? N == in && (K == out || M == out) : K == in && N == out;
  };
  const int64_t tp = std::max<int64_t>(groups.tp, 1);
  const int64_t hd = m.head_dim > 0 ? m.head_dim : (m.heads > 0 ? m.hidden / m.heads : 0);
  const int64_t q = m.heads * hd, kv = m.kv_heads * hd;
  bool qkv = false, proj = false, fc1 = false, fc2 = false, head = false;
  for (const int64_t split : tp > 1 ? std::vector<int64_t>{1, tp} : std::vector<int64_t>{1}) {
    qkv = qkv || fits(q / split, m.hidden) || fits(kv / split, m.hidden) || fits((q + 2 * kv) / split, m.hidden);
    proj = proj || fits(m.hidden, q / split);
    fc1 = fc1 || fits(m.ffn_hidden / split, m.hidden) || (m.gated_ffn && fits(2 * m.ffn_hidden / split, m.hidden));
    fc2 = fc2 || fits(m.hidden, m.ffn_hidden / split);
    head = head || fits(m.vocab / split, m.hidden);
  }
  const int n = int(qkv) + int(proj) + int(fc1) + int(fc2) + int(head);
  if (n == 1) {
    return qkv ? OpCategory::kGemmQkv : proj ? OpCategory::kGemmProj : fc1 ? OpCategory::kGemmFc1 : fc2 ? OpCategory::kGemmFc2 : OpCategory::kGemmLmHead;
  }
  if (n == 2 && qkv && proj) {
    *q_or_proj = true;
    return OpCategory::kGemmProj;
  }
  return OpCategory::kGemmOther;
}

int trace_op_category(const std::string& kernel_name, const TracePlanGroups& groups) {
  const std::string n = lower(kernel_name);
  const std::string c = kernel_category(kernel_name);
  auto id = [](OpCategory x) { return static_cast<int>(x); };
  if (is_comm_category(c)) {
    if (c == "nccl_alltoall" || c.rfind("deepep_", 0) == 0) return id(OpCategory::kEpComm);
    if (c != "nccl_sendrecv" && groups.stated && (groups.tp > 1 || groups.cp > 1) && groups.dp == 1) return id(OpCategory::kTpComm);
    return -1;
  }
  if (has(n, "cross_entropy") || has(n, "nll_loss") || has(n, "log_softmax")) return id(OpCategory::kCrossEntropy);
  if (c == "gemm") return id(OpCategory::kGemmOther);
  if (c == "attention") return id(OpCategory::kAttentionFused);
  if (c == "softmax") return id(OpCategory::kSoftmax);
  if (c == "norm") return id(OpCategory::kNorm);
  if (c == "activation") return id(OpCategory::kActivation);
  if (c == "optimizer") return id(OpCategory::kOptimizer);
  if (c == "moe_route") return id(OpCategory::kMoeRouter);
  if (c == "moe_permute") return id(OpCategory::kMoePermute);
  if (c == "elementwise") {
    if (has(n, "rope") || has(n, "rotary")) return id(OpCategory::kRotary);
    if (has(n, "embedding")) return id(OpCategory::kEmbedding);
    if (has(n, "fp8") || has(n, "quantiz") || has(n, "amax") || has(n, "cast_transpose")) return id(OpCategory::kFp8Cast);
    if (has(n, "add") || has(n, "bias") || has(n, "dropout")) return id(OpCategory::kResidualBias);
  }
  return id(OpCategory::kOther);
}

}  // namespace trainsim
