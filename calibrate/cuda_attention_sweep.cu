// Times and checks causal attention with the CUDA runtime's own kernels (see
// cuda_attention_sweep.cuh). First both paths are checked on every row of a small case (seq 200,
// not a multiple of the 64-row tile) against the host reference (calibrate/attention_reference.hpp);
// then every timed shape is checked on its first and last head: O and dQ of queries 0, seq/2 and
// seq - 1, dK and dV of keys seq - 65 and seq - 1 (the last rows of the last two key tiles). Buffer
// sets (qkv, dO, O, lse) rotate through an arena larger than twice the L2; the unfused path's
// probabilities (heads x seq x seq) are one buffer, far larger than the L2 anyway.
#include "calibrate/cuda_attention_sweep.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "calibrate/attention_reference.hpp"
#include "calibrate/cuda_fill.cuh"
#include "common/errors.hpp"
#include "kernels/cuda/kernels.cuh"

namespace trainsim {

namespace {

using cuda::bf16;

constexpr const char* kFlashKernel = "trainsim-runtime-flash";
constexpr const char* kUnfusedKernel = "trainsim-runtime-unfused";
// |row - reference| / (|reference| + root-sum-square of its terms' sizes), L2 over head_dim (see
// attention_reference.hpp). The forward rounds P (and, unfused, the scores: up to 1.6 % of a
// probability for scores of 4..8) and O to bf16: about 1 %. The backward also rounds dS (unfused:
// dP too) before its products: a few %. A wrong mask or layout is off by tens of percent on the
// rows it touches (a key row with one query, as seq - 1: 50 % or more).
constexpr double kMaxForwardError = 5e-2;
constexpr double kMaxBackwardError = 1e-1;
constexpr int64_t kSmallSeq = 200, kSmallHeads = 2;

struct Shape {  // batch 1, MHA (kv_heads = heads), causal
  int64_t heads, seq, head_dim;
};

cuda::AttentionShape runtime_shape(const Shape& s) { return {1, s.seq, s.heads, s.heads, s.head_dim}; }

std::string describe(const char* kernel, const Shape& s) {
  char text[128];
  std::snprintf(text, sizeof text, "%s heads=%lld seq=%lld head_dim=%lld causal", kernel, static_cast<long long>(s.heads),
                static_cast<long long>(s.seq), static_cast<long long>(s.head_dim));
  return text;
}

// One rotated set: qkv (seq, 3 heads head_dim), dO and O (seq, heads head_dim) bf16; lse (heads, seq) fp32.
struct Set {
  bf16 *qkv, *dout, *out;
  float* lse;
};

size_t qkv_bytes(const Shape& s) { return align_up(static_cast<size_t>(s.seq * 3 * s.heads * s.head_dim) * 2); }
size_t activation_bytes(const Shape& s) { return align_up(static_cast<size_t>(s.seq * s.heads * s.head_dim) * 2); }
size_t lse_bytes(const Shape& s) { return align_up(static_cast<size_t>(s.heads * s.seq) * 4); }
size_t set_bytes(const Shape& s) { return qkv_bytes(s) + 2 * activation_bytes(s) + lse_bytes(s); }

Set set_at(char* base, const Shape& s) {
  char* dout = base + qkv_bytes(s);
  char* out = dout + activation_bytes(s);
  return {reinterpret_cast<bf16*>(base), reinterpret_cast<bf16*>(dout), reinterpret_cast<bf16*>(out),
          reinterpret_cast<float*>(out + activation_bytes(s))};
}

struct Workspace {
  DeviceBuffer arena;            // rotated sets
  DeviceBuffer dqkv;             // the backward's output
  DeviceBuffer flash_scratch;    // D = rowsum(dO * O)
  DeviceBuffer probs;            // unfused: (heads, seq, seq) bf16 probabilities
  DeviceBuffer unfused_scratch;  // unfused: packed heads and dS
};

Workspace workspace_for(const std::vector<Shape>& shapes, size_t l2_bytes) {
  size_t set = 0, qkv = 0, flash = 0, probs = 0, unfused = 0;
  for (const Shape& s : shapes) {
    const cuda::AttentionShape shape = runtime_shape(s);
    set = std::max(set, set_bytes(s));
    qkv = std::max(qkv, qkv_bytes(s));
    flash = std::max(flash, cuda::flash_attention_backward_scratch_bytes(shape));
    probs = std::max(probs, static_cast<size_t>(s.heads * s.seq * s.seq) * 2);
    unfused = std::max(unfused, cuda::unfused_attention_scratch_bytes(shape));
  }
  return {DeviceBuffer(set + 2 * l2_bytes, "attention inputs"), DeviceBuffer(qkv, "attention dqkv"),
          DeviceBuffer(flash, "flash attention scratch"), DeviceBuffer(probs, "unfused attention probabilities"),
          DeviceBuffer(unfused, "unfused attention scratch")};
}

void run(const GpuContext& context, bool fused, bool backward, const Shape& s, const Set& set, const Workspace& w) {
  const cuda::AttentionShape shape = runtime_shape(s);
  bf16* dqkv = w.dqkv.as<bf16>();
  bf16* probs = w.probs.as<bf16>();
  if (fused && !backward) {
    cuda::flash_attention_forward(set.qkv, set.out, set.lse, shape, context.stream);
  } else if (fused) {
    cuda::flash_attention_backward(set.dout, set.qkv, set.out, set.lse, dqkv, w.flash_scratch.get(), shape, context.stream);
  } else if (!backward) {
    cuda::unfused_attention_forward(context.blas, set.qkv, set.out, probs, w.unfused_scratch.get(), shape, context.stream);
  } else {
    cuda::unfused_attention_backward(context.blas, set.dout, set.qkv, probs, dqkv, w.unfused_scratch.get(), shape,
                                     context.stream);
  }
}

// Rows [0, seq) x columns [col, col + head_dim) of a (seq, width) bf16 device matrix, as floats.
std::vector<float> read_columns(const bf16* device, int64_t width, int64_t col, const Shape& s) {
  std::vector<bf16> raw(static_cast<size_t>(s.seq * s.head_dim));
  check_cuda(cudaMemcpy2D(raw.data(), s.head_dim * 2, device + col, width * 2, s.head_dim * 2, s.seq,
                          cudaMemcpyDeviceToHost),
             "reading back attention rows");
  std::vector<float> values(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) values[i] = __bfloat162float(raw[i]);
  return values;
}

struct HeadCheck {
  int64_t head;
  std::vector<int64_t> queries, keys;
  AttentionRows want;
};

// The host reference for the given heads of a set (its inputs are never written: computed once).
std::vector<HeadCheck> reference(const Shape& s, const Set& set, const std::vector<int64_t>& heads,
                                 const std::vector<int64_t>& queries, const std::vector<int64_t>& keys) {
  const int64_t d = s.head_dim, width = 3 * s.heads * d;
  std::vector<HeadCheck> checks;
  for (const int64_t h : heads) {
    HeadTensors t{s.seq, d, read_columns(set.qkv, width, h * d, s), read_columns(set.qkv, width, (s.heads + h) * d, s),
                  read_columns(set.qkv, width, (2 * s.heads + h) * d, s), read_columns(set.dout, s.heads * d, h * d, s)};
    checks.push_back({h, queries, keys, attention_reference(t, queries, keys)});
  }
  return checks;
}

void expect_rows(const char* what, bool fused, const Shape& s, int64_t head, const std::vector<float>& got,
                 const std::vector<int64_t>& rows, const std::vector<ReferenceRow>& want, double allowed) {
  for (size_t r = 0; r < rows.size(); ++r) {
    const double error = row_error(got.data() + rows[r] * s.head_dim, want[r]);
    if (error <= allowed) continue;  // NaN fails too
    char text[224];
    std::snprintf(text, sizeof text,
                  ": %s row %lld of head %lld is off the reference by %.3g (L2 error over |reference| + the "
                  "root-sum-square of its terms; allowed %.3g)",
                  what, static_cast<long long>(rows[r]), static_cast<long long>(head), error, allowed);
    throw DeviceError("wrong result from " + describe(fused ? kFlashKernel : kUnfusedKernel, s) + text +
                      "\nHINT: this is a bug in kernels/cuda/attention_*.cu (tests/gpu/test_cuda_kernels.cpp "
                      "checks them against the CPU)");
  }
}

// Runs forward and backward once on `set` and compares the checked rows with the reference.
void check(const GpuContext& context, bool fused, const Shape& s, const Set& set, const Workspace& w,
           const std::vector<HeadCheck>& checks) {
  run(context, fused, false, s, set, w);
  run(context, fused, true, s, set, w);
  check_cuda(cudaStreamSynchronize(context.stream), "checking " + describe(fused ? kFlashKernel : kUnfusedKernel, s));
  const int64_t d = s.head_dim, width = 3 * s.heads * d;
  for (const HeadCheck& c : checks) {
    const int64_t h = c.head;
    expect_rows("O", fused, s, h, read_columns(set.out, s.heads * d, h * d, s), c.queries, c.want.out, kMaxForwardError);
    const bf16* dqkv = w.dqkv.as<bf16>();
    expect_rows("dQ", fused, s, h, read_columns(dqkv, width, h * d, s), c.queries, c.want.dq, kMaxBackwardError);
    expect_rows("dK", fused, s, h, read_columns(dqkv, width, (s.heads + h) * d, s), c.keys, c.want.dk, kMaxBackwardError);
    expect_rows("dV", fused, s, h, read_columns(dqkv, width, (2 * s.heads + h) * d, s), c.keys, c.want.dv,
                kMaxBackwardError);
  }
}

std::vector<Shape> shapes(bool quick) {
  std::vector<Shape> result;
  const std::vector<int64_t> heads = quick ? std::vector<int64_t>{32} : std::vector<int64_t>{16, 64};
  const std::vector<int64_t> seqs = quick ? std::vector<int64_t>{1024, 4096}
                                          : std::vector<int64_t>{512, 1024, 2048, 4096, 8192};
  for (const int64_t h : heads)
    for (const int64_t seq : seqs)
      for (const int64_t d : {int64_t{64}, int64_t{128}}) result.push_back({h, seq, d});
  return result;
}

// Forward then backward of one path over the rotated sets (every set's O, lse are a forward's
// before the backward is timed), then the check on set 0. Appends both points to `table`.
void measure_path(const GpuContext& context, bool fused, const Shape& s, const Workspace& w,
                  const std::vector<HeadCheck>& checks, AttentionTable& table) {
  const size_t size = set_bytes(s);
  const int64_t sets = context.rotation_sets(size, w.arena.bytes());
  auto set = [&](int64_t call) { return set_at(w.arena.bytes_ptr() + static_cast<size_t>(call % sets) * size, s); };
  for (const bool backward : {false, true}) {
    AttentionPoint point;
    point.batch_heads = s.heads;
    point.seq = s.seq;
    point.head_dim = s.head_dim;
    point.causal = true;
    point.backward = backward;
    point.timing = context.time_calls([&](int64_t call) { run(context, fused, backward, s, set(call), w); });
    table.points.push_back(point);
    if (!backward) {
      for (int64_t i = 0; i < sets; ++i) run(context, fused, false, s, set(i), w);
    }
  }
  check(context, fused, s, set(0), w, checks);
}

}  // namespace

std::vector<AttentionTable> measure_attention(const GpuContext& context, bool quick) {
  const std::vector<Shape> shape_list = shapes(quick);
  std::vector<Shape> every = shape_list;
  for (const int64_t d : {int64_t{64}, int64_t{128}}) every.push_back({kSmallHeads, kSmallSeq, d});
  const Workspace w = workspace_for(every, context.l2_bytes);
  // Inputs in [-2, 2), written again for every shape (another shape's O and lse lie where its
  // inputs are), and waited for: the reference reads them with plain copies.
  auto fill_inputs = [&] {
    fill_uniform(ElementType::bf16, w.arena.get(), w.arena.bytes() / 2, 31, -2.0f, 2.0f, context.stream);
    check_cuda(cudaStreamSynchronize(context.stream), "filling the attention inputs");
  };

  std::vector<int64_t> all_rows;
  for (int64_t r = 0; r < kSmallSeq; ++r) all_rows.push_back(r);
  for (const int64_t d : {int64_t{64}, int64_t{128}}) {
    const Shape small{kSmallHeads, kSmallSeq, d};
    fill_inputs();
    const Set set = set_at(w.arena.bytes_ptr(), small);
    const std::vector<HeadCheck> checks = reference(small, set, {0, kSmallHeads - 1}, all_rows, all_rows);
    for (const bool fused : {true, false}) check(context, fused, small, set, w, checks);
  }
  context.say("attention: both paths match the reference on every row of a small case, forward and backward");

  std::vector<AttentionTable> tables(2);
  tables[0].dtype = tables[1].dtype = "bf16";
  tables[0].kernel = kFlashKernel;
  tables[1].kernel = kUnfusedKernel;
  for (const Shape& s : shape_list) {
    fill_inputs();
    const std::vector<int64_t> queries = {0, s.seq / 2, s.seq - 1}, keys = {std::max<int64_t>(0, s.seq - 65), s.seq - 1};
    const std::vector<HeadCheck> checks = reference(s, set_at(w.arena.bytes_ptr(), s), {0, s.heads - 1}, queries, keys);
    for (const bool fused : {true, false}) measure_path(context, fused, s, w, checks, tables[fused ? 0 : 1]);
    const auto ms = [](const AttentionTable& t, size_t back) {  // back 2: the shape's forward, 1: its backward
      return t.points[t.points.size() - back].timing.median_s * 1e3;
    };
    char line[224];
    std::snprintf(line, sizeof line,
                  "attention heads=%lld seq=%lld head_dim=%lld causal: flash %.3f ms forward, %.3f ms backward; "
                  "unfused %.3f ms, %.3f ms",
                  static_cast<long long>(s.heads), static_cast<long long>(s.seq), static_cast<long long>(s.head_dim),
                  ms(tables[0], 2), ms(tables[0], 1), ms(tables[1], 2), ms(tables[1], 1));
    context.say(line);
  }
  return tables;
}

}  // namespace trainsim
