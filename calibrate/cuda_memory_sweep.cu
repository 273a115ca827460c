// Times and checks the memory-bound kernels (see cuda_memory_sweep.cuh). A size S is the bytes of
// a kernel's main input; its buffers (a "set": input then outputs, or p, g, m, v for AdamW) rotate
// through an arena larger than twice the L2. After timing, each size is run once more on set 0 and
// a few rows or elements are compared with a host reference computed from the same inputs.
#include "calibrate/cuda_memory_sweep.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "calibrate/cuda_fill.cuh"
#include "calibrate/cuda_memory_kernels.cuh"
#include "common/errors.hpp"

namespace trainsim {

namespace {

constexpr int64_t kRowWidth = 4096;     // hidden size of the layernorm and softmax rows
constexpr int64_t kSwigluWidth = 4096;  // output width of SwiGLU (input rows are twice as wide)
constexpr float kLayernormEps = 1e-5f;
constexpr size_t kCheckWindowBytes = 4096;

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

// Bytes of one buffer set for main-input size s, and bytes read + written by one call.
size_t set_bytes(Kernel kernel, size_t s) {
  switch (kernel) {
    case Kernel::swiglu: return s + s / 2;
    case Kernel::adam: return 4 * s;
    default: return 2 * s;
  }
}

double moved_bytes(Kernel kernel, size_t s) {
  const double b = static_cast<double>(s);
  switch (kernel) {
    case Kernel::layernorm: return 2 * b + 2.0 * kRowWidth * sizeof(__nv_bfloat16);  // + gamma, beta
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
  const int64_t values = static_cast<int64_t>(s / sizeof(__nv_bfloat16));
  switch (kernel) {
    case Kernel::copy:
      check_cuda(cudaMemcpyAsync(set + s, set, s, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (device)");
      break;
    case Kernel::layernorm:
      launch_layernorm(bf16(set), params.gamma, params.beta, bf16(set + s), values / kRowWidth, kRowWidth,
                       kLayernormEps, stream);
      break;
    case Kernel::softmax: launch_softmax(bf16(set), bf16(set + s), values / kRowWidth, kRowWidth, 0, stream); break;
    case Kernel::gelu: launch_gelu(bf16(set), bf16(set + s), values, stream); break;
    case Kernel::swiglu: launch_swiglu(bf16(set), bf16(set + s), values / (2 * kSwigluWidth), kSwigluWidth, stream); break;
    case Kernel::adam:
      launch_adam(f32(set), f32(set + s), f32(set + 2 * s), f32(set + 3 * s), static_cast<int64_t>(s / 4), AdamStep{},
                  stream);
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
  throw DeviceError(std::string(text) + "\nHINT: rerun; if it repeats, this is a bug in calibrate/cuda_memory_kernels.cu");
}

// Rows 0 and last of layernorm / softmax against a double-precision host reference.
void check_rows(Kernel kernel, const char* set, size_t s, const Params& params) {
  const int64_t rows = static_cast<int64_t>(s / 2) / kRowWidth;
  const std::vector<float> gamma = read_floats(reinterpret_cast<const char*>(params.gamma), kRowWidth, true);
  const std::vector<float> beta = read_floats(reinterpret_cast<const char*>(params.beta), kRowWidth, true);
  for (const int64_t row : {int64_t{0}, rows - 1}) {
    const size_t offset = static_cast<size_t>(row * kRowWidth) * 2;
    const std::vector<float> x = read_floats(set + offset, kRowWidth, true);
    const std::vector<float> y = read_floats(set + s + offset, kRowWidth, true);
    double a = 0, b = 0;  // layernorm: mean, 1/std; softmax: max, sum of exponentials
    if (kernel == Kernel::layernorm) {
      for (const float v : x) a += v;
      a /= kRowWidth;
      for (const float v : x) b += (v - a) * (v - a);
      b = 1.0 / std::sqrt(b / kRowWidth + kLayernormEps);
    } else {
      a = x[0];
      for (const float v : x) a = std::max(a, static_cast<double>(v));
      for (const float v : x) b += std::exp(v - a);
    }
    for (int64_t c = 0; c < kRowWidth; ++c) {
      const double reference = kernel == Kernel::layernorm ? (x[c] - a) * b * gamma[c] + beta[c] : std::exp(x[c] - a) / b;
      const double allowed = kernel == Kernel::layernorm ? 5e-3 * std::fabs(reference) + 1e-3
                                                         : 5e-3 * std::fabs(reference) + 1e-7;
      expect_close(kernel, s, static_cast<size_t>(row * kRowWidth + c), y[c], reference, allowed);
    }
  }
}

// A few elements (first, last, and spread between) of the elementwise kernels.
void check_elements(Kernel kernel, char* set, size_t s, cudaStream_t stream, const Params& params) {
  const bool adam = kernel == Kernel::adam;
  const size_t count = adam ? s / 4 : (kernel == Kernel::swiglu ? s / 4 : s / 2);  // outputs
  const size_t indices[] = {0, 1, 7, count / 3, count / 2 + 5, count - 1};
  std::vector<std::vector<float>> before;
  if (adam) {
    for (const size_t i : indices) {
      std::vector<float> pgmv;
      for (int t = 0; t < 4; ++t) pgmv.push_back(read_floats(set + t * s + 4 * i, 1, false)[0]);
      before.push_back(pgmv);
    }
    run(kernel, set, s, params, stream);  // one more step, from the state just read
    check_cuda(cudaStreamSynchronize(stream), "running the adam kernel for its check");
  }
  const AdamStep step;
  const double c1 = 1.0 - std::pow(static_cast<double>(step.beta1), step.step);
  const double c2 = 1.0 - std::pow(static_cast<double>(step.beta2), step.step);
  for (size_t n = 0; n < std::size(indices); ++n) {
    const size_t i = indices[n];
    if (kernel == Kernel::gelu) {
      const double x = read_floats(set + 2 * i, 1, true)[0];
      const double reference = 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      expect_close(kernel, s, i, read_floats(set + s + 2 * i, 1, true)[0], reference, 5e-3 * std::fabs(reference) + 1e-4);
    } else if (kernel == Kernel::swiglu) {
      const size_t row = i / kSwigluWidth, col = i % kSwigluWidth;
      const double gate = read_floats(set + 2 * (row * 2 * kSwigluWidth + col), 1, true)[0];
      const double up = read_floats(set + 2 * (row * 2 * kSwigluWidth + kSwigluWidth + col), 1, true)[0];
      const double reference = gate / (1 + std::exp(-gate)) * up;
      expect_close(kernel, s, i, read_floats(set + s + 2 * i, 1, true)[0], reference, 5e-3 * std::fabs(reference) + 1e-4);
    } else {
      const double p = before[n][0], g = before[n][1];
      const double m = step.beta1 * before[n][2] + (1 - step.beta1) * g;
      const double v = step.beta2 * before[n][3] + (1 - step.beta2) * g * g;
      const double update = (m / c1) / (std::sqrt(v / c2) + step.eps);
      const double p_new = p - step.lr * (update + step.weight_decay * p);
      expect_close(kernel, s, i, read_floats(set + 4 * i, 1, false)[0], p_new,
                   1e-5 * (std::fabs(p_new) + step.lr * std::fabs(update)) + 1e-7);
      expect_close(kernel, s, i, read_floats(set + 2 * s + 4 * i, 1, false)[0], m, 1e-5 * std::fabs(m) + 1e-7);
      expect_close(kernel, s, i, read_floats(set + 3 * s + 4 * i, 1, false)[0], v, 1e-5 * std::fabs(v) + 1e-7);
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
  const bool adam = kernel == Kernel::adam;
  if (adam) {  // p, g, m, v in [0, 1): v must not be negative
    fill_uniform(ElementType::fp32, arena.get(), arena.bytes() / 4, 11, 0.0f, 1.0f, context.stream);
  } else {
    fill_uniform(ElementType::bf16, arena.get(), arena.bytes() / 2, 12, -3.0f, 3.0f, context.stream);
  }
  MemoryBoundTable table;
  table.kernel = kernel_name(kernel);
  for (const size_t s : size_list) {
    const size_t set = align_up(set_bytes(kernel, s));
    const int64_t sets = context.rotation_sets(set, arena.bytes());
    MemoryBoundPoint point;
    point.bytes = moved_bytes(kernel, s);
    point.timing = context.time_calls([&](int64_t call) {
      run(kernel, arena.bytes_ptr() + static_cast<size_t>(call % sets) * set, s, params, context.stream);
    });
    char* set0 = arena.bytes_ptr();
    if (!adam) run(kernel, set0, s, params, context.stream);
    check_cuda(cudaStreamSynchronize(context.stream), std::string("running the ") + table.kernel + " kernel");
    if (kernel == Kernel::copy) {
      check_windows("a device-to-device copy", s, set0, true, set0 + s, true);
    } else if (kernel == Kernel::layernorm || kernel == Kernel::softmax) {
      check_rows(kernel, set0, s, params);
    } else {
      check_elements(kernel, set0, s, context.stream, params);
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
