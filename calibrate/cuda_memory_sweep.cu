// Times and checks the memory-bound kernels (see cuda_memory_sweep.cuh): the runtime's own
// (kernels/cuda: layer norm, the unfused attention's causal softmax, GELU, SwiGLU, AdamW)
// and cudaMemcpy. A size S is the bytes of a kernel's main input; its buffers (a "set": input then
// outputs, or p, g, m, v and the bf16 weights for AdamW) rotate through an arena larger than twice
// the L2. After timing, each check reads a few rows or elements of set 0, runs the kernel once more
// on it and compares the outputs with a host reference computed from the same inputs.
#include "calibrate/cuda_memory_sweep.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "calibrate/cuda_fill.cuh"
#include "common/errors.hpp"
#include "kernels/cuda/kernels.cuh"

namespace trainsim {

namespace {

constexpr int64_t kRowWidth = 4096;     // hidden size of the layernorm rows, sequence of the softmax rows
constexpr int64_t kSwigluWidth = 4096;  // output width of SwiGLU (input rows are twice as wide)
constexpr float kLayernormEps = 1e-5f;  // the runtime's (kernels/cuda/norm.cu)
constexpr size_t kCheckWindowBytes = 4096;
const cuda::AdamW kAdamW{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 10};

enum class Kernel { copy, layernorm, softmax, gelu, swiglu, adam };
constexpr Kernel kKernels[] = {Kernel::copy, Kernel::layernorm, Kernel::softmax,
                               Kernel::gelu, Kernel::swiglu,    Kernel::adam};

const char* kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::copy: return "copy";
    case Kernel::layernorm: return "layernorm";
    case Kernel::softmax: return "softmax";
    case Kernel::gelu: return "gelu";
    case Kernel::swiglu: return "swiglu";
    case Kernel::adam: return "adam";
  }
  return "?";
}

int64_t rows_of(size_t s) { return static_cast<int64_t>(s / sizeof(__nv_bfloat16)) / kRowWidth; }

// Bytes of one buffer set for main-input size s, and bytes read + written by one call.
size_t set_bytes(Kernel kernel, size_t s) {
  switch (kernel) {
    case Kernel::layernorm: return 2 * s + static_cast<size_t>(rows_of(s)) * 2 * sizeof(float);  // + mean, rstd
    case Kernel::softmax: return s;  // in place
    case Kernel::swiglu: return s + s / 2;
    case Kernel::adam: return 4 * s + s / 2;  // p, g, m, v, bf16 weights
    default: return 2 * s;
  }
}

// The simulator's convention where it has one: the causal softmax counts the whole score matrix
// read and written (it touches keys 0..t only); AdamW 7 fp32 accesses per parameter (the bf16
// weight copy the runtime also writes is not counted), as sim/profiled_cost_model.cpp looks it up.
double moved_bytes(Kernel kernel, size_t s) {
  const double b = static_cast<double>(s);
  switch (kernel) {
    case Kernel::layernorm:  // + gamma, beta, mean, rstd
      return 2 * b + 2.0 * kRowWidth * sizeof(__nv_bfloat16) + 2.0 * static_cast<double>(rows_of(s)) * sizeof(float);
    case Kernel::swiglu: return 1.5 * b;
    case Kernel::adam: return 7 * b;  // reads p, g, m, v; writes p, m, v
    default: return 2 * b;
  }
}

struct Params {  // layernorm's gamma and beta, (kRowWidth) each
  const __nv_bfloat16* gamma;
  const __nv_bfloat16* beta;
};

void run(Kernel kernel, char* set, size_t s, const Params& params, cudaStream_t stream) {
  auto bf16 = [](char* p) { return reinterpret_cast<__nv_bfloat16*>(p); };
  auto f32 = [](char* p) { return reinterpret_cast<float*>(p); };
  const int64_t values = static_cast<int64_t>(s / sizeof(__nv_bfloat16)), rows = rows_of(s);
  switch (kernel) {
    case Kernel::copy:
      check_cuda(cudaMemcpyAsync(set + s, set, s, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (device)");
      break;
    case Kernel::layernorm:
      cuda::layer_norm_forward(bf16(set), params.gamma, params.beta, bf16(set + s), f32(set + 2 * s),
                               f32(set + 2 * s) + rows, rows, kRowWidth, stream);
      break;
    case Kernel::softmax: cuda::causal_softmax(bf16(set), rows, kRowWidth, stream); break;
    case Kernel::gelu: cuda::gelu_forward(bf16(set), bf16(set + s), values, stream); break;
    case Kernel::swiglu:
      cuda::swiglu_forward(bf16(set), bf16(set + s), values / (2 * kSwigluWidth), kSwigluWidth, stream);
      break;
    case Kernel::adam:
      cuda::adamw(f32(set), f32(set + s), f32(set + 2 * s), f32(set + 3 * s), bf16(set + 4 * s),
                  static_cast<int64_t>(s / 4), kAdamW, 1.0f, stream);
      break;
  }
}

std::vector<float> read_floats(const char* device, size_t count, bool bf16) {
  std::vector<float> values(count);
  if (bf16) {
    std::vector<__nv_bfloat16> raw(count);
    check_cuda(cudaMemcpy(raw.data(), device, count * 2, cudaMemcpyDeviceToHost), "reading back a check slice");
    for (size_t i = 0; i < count; ++i) values[i] = __bfloat162float(raw[i]);
  } else {
    check_cuda(cudaMemcpy(values.data(), device, count * 4, cudaMemcpyDeviceToHost), "reading back a check slice");
  }
  return values;
}

void expect_close(Kernel kernel, size_t s, size_t index, double got, double reference, double allowed) {
  if (std::fabs(got - reference) <= allowed) return;
  char text[256];
  std::snprintf(text, sizeof text, "wrong result from the %s kernel at %s: element %zu is %.7g, the host reference "
                "%.7g (allowed error %.3g)", kernel_name(kernel), format_bytes(static_cast<double>(s)).c_str(), index,
                got, reference, allowed);
  throw DeviceError(std::string(text) + "\nHINT: rerun; if it repeats, this is a bug in kernels/cuda/");
}

// Rows 0, last and (where there is one) 4095, a whole causal softmax row, of layernorm / softmax:
// inputs read, the kernel run once more on set 0, outputs against a double-precision reference.
void check_rows(Kernel kernel, char* set, size_t s, const Params& params, cudaStream_t stream) {
  const bool norm = kernel == Kernel::layernorm;
  const int64_t rows = rows_of(s);
  const std::vector<float> gamma = read_floats(reinterpret_cast<const char*>(params.gamma), kRowWidth, true);
  const std::vector<float> beta = read_floats(reinterpret_cast<const char*>(params.beta), kRowWidth, true);
  const int64_t checked[] = {0, rows - 1, std::min(rows, kRowWidth) - 1};
  std::vector<std::vector<float>> inputs;
  auto row_at = [](int64_t row) { return static_cast<size_t>(row * kRowWidth) * 2; };  // byte offset
  for (const int64_t row : checked) inputs.push_back(read_floats(set + row_at(row), kRowWidth, true));
  run(kernel, set, s, params, stream);
  check_cuda(cudaStreamSynchronize(stream), std::string("running the ") + kernel_name(kernel) + " kernel for its check");
  for (size_t n = 0; n < std::size(checked); ++n) {
    const int64_t row = checked[n], last = norm ? kRowWidth - 1 : row % kRowWidth;  // softmax: keys 0..last
    const std::vector<float>& x = inputs[n];
    const std::vector<float> y = read_floats(set + (norm ? s : 0) + row_at(row), kRowWidth, true);
    double a = 0, b = 0;  // layernorm: mean, 1/std; softmax: max, sum of exponentials
    if (norm) {
      for (const float v : x) a += v;
      a /= kRowWidth;
      for (const float v : x) b += (v - a) * (v - a);
      b = 1.0 / std::sqrt(b / kRowWidth + kLayernormEps);
    } else {
      a = *std::max_element(x.begin(), x.begin() + last + 1);
      for (int64_t c = 0; c <= last; ++c) b += std::exp(x[c] - a);
    }
    for (int64_t c = 0; c < kRowWidth; ++c) {
      const double reference = norm ? (x[c] - a) * b * gamma[c] + beta[c] : (c <= last ? std::exp(x[c] - a) / b : 0.0);
      const double allowed = 5e-3 * std::fabs(reference) + (norm ? 1e-3 : 1e-7);
      expect_close(kernel, s, static_cast<size_t>(row * kRowWidth + c), y[c], reference, allowed);
    }
  }
}

// A few elements (first, last, and spread between) of the elementwise kernels and AdamW: inputs
// read, the kernel run once more on set 0 (AdamW: one more step from the state just read).
void check_elements(Kernel kernel, char* set, size_t s, const Params& params, cudaStream_t stream) {
  const size_t count = kernel == Kernel::gelu ? s / 2 : s / 4;  // outputs (SwiGLU: half of s / 2)
  const size_t indices[] = {0, 1, 7, count / 3, count / 2 + 5, count - 1};
  std::vector<std::vector<float>> before;  // gelu: x; swiglu: gate, up; adam: p, g, m, v
  for (const size_t i : indices) {
    std::vector<float> in;
    if (kernel == Kernel::gelu) in.push_back(read_floats(set + 2 * i, 1, true)[0]);
    if (kernel == Kernel::swiglu) {
      const size_t row = i / kSwigluWidth, col = i % kSwigluWidth;
      for (const size_t half : {size_t{0}, size_t{1}}) {
        in.push_back(read_floats(set + 2 * ((2 * row + half) * kSwigluWidth + col), 1, true)[0]);
      }
    }
    if (kernel == Kernel::adam) {
      for (size_t t = 0; t < 4; ++t) in.push_back(read_floats(set + t * s + 4 * i, 1, false)[0]);
    }
    before.push_back(in);
  }
  run(kernel, set, s, params, stream);
  check_cuda(cudaStreamSynchronize(stream), std::string("running the ") + kernel_name(kernel) + " kernel for its check");
  const double c1 = 1.0 - std::pow(static_cast<double>(kAdamW.beta1), static_cast<double>(kAdamW.step));
  const double c2 = 1.0 - std::pow(static_cast<double>(kAdamW.beta2), static_cast<double>(kAdamW.step));
  for (size_t n = 0; n < std::size(indices); ++n) {
    const size_t i = indices[n];
    const std::vector<float>& in = before[n];
    if (kernel == Kernel::gelu) {
      const double x = in[0];
      const double reference = 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      expect_close(kernel, s, i, read_floats(set + s + 2 * i, 1, true)[0], reference, 5e-3 * std::fabs(reference) + 1e-4);
    } else if (kernel == Kernel::swiglu) {
      const double gate = in[0], up = in[1], reference = gate / (1 + std::exp(-gate)) * up;
      expect_close(kernel, s, i, read_floats(set + s + 2 * i, 1, true)[0], reference, 5e-3 * std::fabs(reference) + 1e-4);
    } else {
      const double p = in[0], g = in[1];
      const double m = kAdamW.beta1 * in[2] + (1 - kAdamW.beta1) * g;
      const double v = kAdamW.beta2 * in[3] + (1 - kAdamW.beta2) * g * g;
      const double update = (m / c1) / (std::sqrt(v / c2) + kAdamW.eps);
      const double p_new = p - kAdamW.lr * (update + kAdamW.weight_decay * p);
      expect_close(kernel, s, i, read_floats(set + 4 * i, 1, false)[0], p_new,
                   1e-5 * (std::fabs(p_new) + kAdamW.lr * std::fabs(update)) + 1e-7);
      expect_close(kernel, s, i, read_floats(set + 2 * s + 4 * i, 1, false)[0], m, 1e-5 * std::fabs(m) + 1e-7);
      expect_close(kernel, s, i, read_floats(set + 3 * s + 4 * i, 1, false)[0], v, 1e-5 * std::fabs(v) + 1e-7);
      expect_close(kernel, s, i, read_floats(set + 4 * s + 2 * i, 1, true)[0], p_new, 5e-3 * std::fabs(p_new) + 1e-7);
    }
  }
}

void check_bytes_equal(const char* what, size_t s, const unsigned char* expected, const unsigned char* got) {
  if (std::memcmp(expected, got, kCheckWindowBytes) == 0) return;
  throw DeviceError(std::string("wrong result from ") + what + " of " + format_bytes(static_cast<double>(s)) +
                    ": the copied bytes differ from the source\nHINT: rerun; if it repeats, check the GPU "
                    "(nvidia-smi -q for ECC errors)");
}

// Three windows (start, middle, end) of a copy of s bytes: device src and dst, or host and device.
void check_windows(const char* what, size_t s, const char* expected, bool expected_on_device, const char* got,
                   bool got_on_device) {
  std::vector<unsigned char> a(kCheckWindowBytes), b(kCheckWindowBytes);
  for (const size_t offset : {size_t{0}, (s / 2) & ~size_t{255}, s - kCheckWindowBytes}) {
    const unsigned char* x = reinterpret_cast<const unsigned char*>(expected + offset);
    const unsigned char* y = reinterpret_cast<const unsigned char*>(got + offset);
    if (expected_on_device) {
      check_cuda(cudaMemcpy(a.data(), x, kCheckWindowBytes, cudaMemcpyDeviceToHost), "reading back a copy");
      x = a.data();
    }
    if (got_on_device) {
      check_cuda(cudaMemcpy(b.data(), y, kCheckWindowBytes, cudaMemcpyDeviceToHost), "reading back a copy");
      y = b.data();
    }
    check_bytes_equal(what, s, x, y);
  }
}

std::vector<size_t> sizes(bool quick) {
  std::vector<size_t> result;
  for (size_t s = size_t{1} << 20; s <= (size_t{1} << 30); s *= quick ? 16 : 4) result.push_back(s);
  return result;
}

MemoryBoundTable measure_kernel(const GpuContext& context, Kernel kernel, const std::vector<size_t>& size_list,
                                const DeviceBuffer& arena, const Params& params) {
  MemoryBoundTable table;
  table.kernel = kernel_name(kernel);
  for (const size_t s : size_list) {
    // Fresh inputs for every size: the sets of the last size left outputs where these inputs lie
    // (AdamW's p drifts below 0 over many steps and would land in v; layer norm's fp32 statistics
    // read as bf16 can be inf or NaN).
    if (kernel == Kernel::adam) {  // p, g, m, v in [0, 1): v must not be negative
      fill_uniform(ElementType::fp32, arena.get(), arena.bytes() / 4, 11, 0.0f, 1.0f, context.stream);
    } else {
      fill_uniform(ElementType::bf16, arena.get(), arena.bytes() / 2, 12, -3.0f, 3.0f, context.stream);
    }
    const size_t set = align_up(set_bytes(kernel, s));
    const int64_t sets = context.rotation_sets(set, arena.bytes());
    MemoryBoundPoint point;
    point.bytes = moved_bytes(kernel, s);
    point.timing = context.time_calls([&](int64_t call) {
      run(kernel, arena.bytes_ptr() + static_cast<size_t>(call % sets) * set, s, params, context.stream);
    });
    char* set0 = arena.bytes_ptr();
    if (kernel == Kernel::copy) {
      run(kernel, set0, s, params, context.stream);
      check_cuda(cudaStreamSynchronize(context.stream), "running the copy for its check");
      check_windows("a device-to-device copy", s, set0, true, set0 + s, true);
    } else if (kernel == Kernel::layernorm || kernel == Kernel::softmax) {
      check_rows(kernel, set0, s, params, context.stream);
    } else {
      check_elements(kernel, set0, s, params, context.stream);
    }
    table.points.push_back(point);
  }
  const MemoryBoundPoint& last = table.points.back();
  char line[160];
  std::snprintf(line, sizeof line, "memory %s: %zu sizes, %.0f GB/s at %s", table.kernel.c_str(), table.points.size(),
                last.bytes / last.timing.median_s / 1e9, format_bytes(static_cast<double>(size_list.back())).c_str());
  context.say(line);
  return table;
}

MemoryBoundTable measure_host_copy(const GpuContext& context, bool to_device, const std::vector<size_t>& size_list,
                                   const PinnedBuffer& host, const DeviceBuffer& device) {
  MemoryBoundTable table;
  table.kernel = to_device ? "h2d" : "d2h";
  const char* what = to_device ? "a host-to-device copy" : "a device-to-host copy";
  for (const size_t s : size_list) {
    MemoryBoundPoint point;
    point.bytes = static_cast<double>(s);
    point.timing = context.time_calls([&](int64_t) {
      const cudaError_t status = to_device ? cudaMemcpyAsync(device.get(), host.data(), s, cudaMemcpyHostToDevice, context.stream)
                                           : cudaMemcpyAsync(host.data(), device.get(), s, cudaMemcpyDeviceToHost, context.stream);
      if (status != cudaSuccess) check_cuda(status, std::string("cudaMemcpyAsync for ") + what);
    });
    check_cuda(cudaStreamSynchronize(context.stream), what);
    const char* h = reinterpret_cast<const char*>(host.data());
    if (to_device) {
      check_windows(what, s, h, false, device.bytes_ptr(), true);
    } else {
      check_windows(what, s, device.bytes_ptr(), true, h, false);
    }
    table.points.push_back(point);
  }
  const MemoryBoundPoint& last = table.points.back();
  char line[128];
  std::snprintf(line, sizeof line, "memory %s: %.1f GB/s at %s", table.kernel.c_str(),
                last.bytes / last.timing.median_s / 1e9, format_bytes(last.bytes).c_str());
  context.say(line);
  return table;
}

}  // namespace

std::vector<MemoryBoundTable> measure_memory_bound(const GpuContext& context, bool quick) {
  const std::vector<size_t> size_list = sizes(quick);
  const size_t largest = size_list.back();
  size_t largest_set = 0;
  for (const Kernel kernel : kKernels) largest_set = std::max(largest_set, align_up(set_bytes(kernel, largest)));
  DeviceBuffer arena(largest_set + 2 * context.l2_bytes, "memory-bound kernel buffers");
  DeviceBuffer norm_params(2 * kRowWidth * sizeof(__nv_bfloat16), "layernorm gamma and beta");
  fill_uniform(ElementType::bf16, norm_params.get(), kRowWidth, 21, 0.5f, 1.5f, context.stream);
  fill_uniform(ElementType::bf16, norm_params.bytes_ptr() + 2 * kRowWidth, kRowWidth, 22, -0.5f, 0.5f, context.stream);
  const Params params{norm_params.as<__nv_bfloat16>(), norm_params.as<__nv_bfloat16>() + kRowWidth};

  std::vector<MemoryBoundTable> tables;
  for (const Kernel kernel : kKernels) tables.push_back(measure_kernel(context, kernel, size_list, arena, params));

  PinnedBuffer host(largest, "host copies");
  for (size_t i = 0; i < largest; ++i) host.data()[i] = static_cast<unsigned char>((i * 131 + i / 4096) & 0xFF);
  tables.push_back(measure_host_copy(context, true, size_list, host, arena));
  fill_uniform(ElementType::bf16, arena.get(), largest / 2, 23, -1.0f, 1.0f, context.stream);
  tables.push_back(measure_host_copy(context, false, size_list, host, arena));
  return tables;
}

}  // namespace trainsim
