// CPU calibration: Eigen GEMM grid, copy bandwidth, MPI collectives (nccl-tests conventions).
#include "calibrate/cpu_calibrator.hpp"

#include <mpi.h>
#include <unistd.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "calibrate/collective_fit.hpp"
#include "calibrate/profile_stamp.hpp"
#include "calibrate/sampler.hpp"
#include "common/errors.hpp"
#include "common/host_allocator.hpp"

namespace trainsim {

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every rank runs `body` between barriers; the sample is rank 0's wall time until every rank is
// done. When ranks outnumber cores (oversubscribed), short bodies would otherwise run one rank
// after another and each look uncontended, while a training run shares the cores all along.
std::function<double()> lockstep(const std::function<void()>& body) {
  return [body] {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_s();
    body();
    MPI_Barrier(MPI_COMM_WORLD);
    const double seconds = now_s() - start;
    double kept = seconds;
    MPI_Bcast(&kept, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);  // every rank agrees on when to stop sampling
    return kept;
  };
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

GemmTable gemm_sweep(const CpuCalibrationOptions& o, const SamplerOptions& sampler) {
  GemmTable t;
  t.dtype = "fp32";
  // M is tokens (or tokens x heads for batched attention GEMMs): it reaches further than N and K.
  t.m_values = o.quick ? std::vector<int64_t>{64, 256, 1024, 4096} : std::vector<int64_t>{64, 256, 1024, 4096, 16384};
  t.n_values = t.k_values = o.quick ? std::vector<int64_t>{16, 64, 256, 1024}
                                    : std::vector<int64_t>{16, 32, 64, 128, 256, 512, 1024, 2048};
  for (int64_t m : t.m_values) {
    for (int64_t n : t.n_values) {
      for (int64_t k : t.k_values) {
        Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n), c(m, n);
        // As the runtime runs its GEMMs: every product into a matrix of its own (allocated, and
        // its lines brought into the cache as it is written), not into one output reused hot.
        const Timing timing = sample_until_stable(lockstep([&] {
          Matrix fresh = a * b;
          c.swap(fresh);
        }), sampler);
        // Check one entry against a plain dot product.
        double expected = 0;
        for (int64_t i = 0; i < k; ++i) expected += static_cast<double>(a(m / 2, i)) * b(i, n / 2);
        if (std::fabs(c(m / 2, n / 2) - expected) > 1e-3 * (1.0 + std::fabs(expected)) + 1e-4 * static_cast<double>(k)) {
          throw DeviceError("calibrate cpu: Eigen GEMM " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                            std::to_string(k) + " gave a wrong result");
        }
        t.points.push_back({m, n, k, timing});
      }
    }
    if (o.progress) o.progress("gemm m=" + std::to_string(m) + " done");
  }
  return t;
}

MemoryBoundTable copy_sweep(const CpuCalibrationOptions& o, const SamplerOptions& sampler) {
  MemoryBoundTable t;
  t.kernel = "copy";
  const double max_bytes = o.quick ? 64.0 * (1 << 20) : 512.0 * (1 << 20);
  for (double bytes = 64 * 1024; bytes <= max_bytes; bytes *= 4) {
    const size_t n = static_cast<size_t>(bytes / 2 / sizeof(float));  // half read, half written
    std::vector<float> src(n, 1.5f), dst(n, 0.0f);
    const Timing timing = sample_until_stable(lockstep([&] { std::memcpy(dst.data(), src.data(), n * sizeof(float)); }), sampler);
    if (dst[n / 2] != 1.5f) throw DeviceError("calibrate cpu: memory copy gave a wrong result");
    t.points.push_back({static_cast<double>(2 * n * sizeof(float)), timing});
  }
  if (o.progress) o.progress("memory copy done");
  return t;
}

}  // namespace

std::vector<CollectiveTable> mpi_collective_sweep(const CpuCalibrationOptions& o, const SamplerOptions& sampler);
std::vector<MemoryBoundTable> cpu_kernel_sweep(const CpuCalibrationOptions& o, const SamplerOptions& sampler);
std::vector<MemoryBoundTable> storage_sweep(const CpuCalibrationOptions& o);

HardwareProfile calibrate_cpu(const CpuCalibrationOptions& o) {
  keep_freed_memory_in_process();  // the runtime's allocator regime: kernels time without page faults
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  SamplerOptions sampler;
  sampler.min_samples = 5;
  sampler.max_total_s = o.quick ? 0.05 : 0.3;
  HardwareProfile p;
  ProfileProvenance& v = p.provenance;
  v.device_kind = "cpu";
  v.device = cpu_model_name();
  v.devices = ranks;
  v.cores = static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN));
  v.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  v.eigen = eigen_version();
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(mpi_version, &length);
  v.mpi = std::string(mpi_version, static_cast<size_t>(length));
  if (auto newline = v.mpi.find('\n'); newline != std::string::npos) v.mpi.resize(newline);
  stamp_provenance(v);
  v.method = "steady_clock per sample on rank 0 until every rank is done, all ranks in lockstep between barriers; freed memory kept in "
             "the process as the runtime keeps it (no page faults in steady state); warm-up 3; stop when "
             "(p90-p10)/median < 5% after 5 samples or the case's time cap";
  p.gemm.push_back(gemm_sweep(o, sampler));
  p.memory_bound.push_back(copy_sweep(o, sampler));
  for (MemoryBoundTable& t : cpu_kernel_sweep(o, sampler)) p.memory_bound.push_back(std::move(t));
  if (!o.storage_dir.empty()) {
    for (MemoryBoundTable& t : storage_sweep(o)) p.memory_bound.push_back(std::move(t));
  } else {
    p.notes.push_back("no checkpoint storage measured (calibrate cpu --checkpoint-dir DIR measures it)");
  }
  if (ranks > 1) {
    p.collectives = mpi_collective_sweep(o, sampler);
  } else {
    p.notes.push_back("one MPI rank: no collectives measured (launch under `mpirun -np N` to measure them)");
  }
  p.notes.push_back("attention is not measured on CPU: CPU plans use --attention unfused (GEMMs + memory-bound)");
  return p;
}

}  // namespace trainsim
