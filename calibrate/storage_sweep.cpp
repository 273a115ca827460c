// Checkpoint storage rates of a folder, as the runtime checkpoints: every rank saves (then loads)
// n floats of state with the runtime's own save_checkpoint_set / load_checkpoint_set (copy out of
// the state, serialise, checksum, write a temporary file, rename, move `latest`, drop the previous
// set), all ranks at once as a job's ranks on one node do. A load happens in a fresh process: before
// each load sample the heap's free memory goes back to the kernel (malloc_trim), so the load pays
// its first-touch page faults as a restarted run does; saves are timed warm, as in a long run.
// Tables "storage_write" / "storage_read", bytes = all ranks' files: the node's rate. The page
// cache is not bypassed (neither does the runtime): the rates are what a run sees on this machine.
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "calibrate/cpu_calibrator.hpp"
#include "calibrate/sampler.hpp"
#include "common/errors.hpp"
#include "runtime/checkpoint.hpp"

namespace trainsim {

namespace {

double now_s() { return MPI_Wtime(); }

constexpr size_t kTensors = 48;  // a small model's parameter and optimizer tensors (gpt-ckpt: 56)

// Rank 0's wall time from the barrier before to the barrier after `body` on every rank (`cold`:
// the heap's free memory given back to the kernel first, outside the timing).
std::function<double()> together(const std::function<void()>& body, bool cold = false) {
  return [body, cold] {
    if (cold) malloc_trim(0);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now_s();
    body();
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = now_s() - start;
    MPI_Bcast(&seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return seconds;
  };
}

}  // namespace

std::vector<MemoryBoundTable> storage_sweep(const CpuCalibrationOptions& o) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  SamplerOptions sampler;
  sampler.warmup = 1;
  sampler.min_samples = 5;
  sampler.max_samples = 30;
  sampler.max_total_s = o.quick ? 2.0 : 5.0;
  MemoryBoundTable write, read;
  write.kernel = "storage_write";
  read.kernel = "storage_read";
  const std::string dir = o.storage_dir + "/trainsim-calibrate-storage";
  const double max_bytes = o.quick ? 64.0 * (1 << 20) : 256.0 * (1 << 20);
  int64_t iteration = 0;
  for (double bytes = 4.0 * (1 << 20); bytes <= max_bytes; bytes *= 4) {
    const std::vector<float> state(static_cast<size_t>(bytes / sizeof(float)), 0.5f);
    // In pieces, as a rank's states are (a tensor per parameter, then the optimizer's).
    const size_t chunk = (state.size() + kTensors - 1) / kTensors;
    std::vector<size_t> sizes;
    for (size_t begin = 0; begin < state.size(); begin += chunk) sizes.push_back(std::min(chunk, state.size() - begin));
    runtime::CheckpointHeader header;
    header.world_size = ranks;
    const Timing w = sample_until_stable(together([&] {
      runtime::CheckpointData data;  // as Trainer::save_checkpoint: the state copied out, then saved
      data.header = header;
      data.header.iteration = iteration++;
      for (size_t begin = 0; begin < state.size(); begin += chunk) {
        data.tensors.emplace_back(state.begin() + static_cast<std::ptrdiff_t>(begin),
                                  state.begin() + static_cast<std::ptrdiff_t>(std::min(state.size(), begin + chunk)));
      }
      runtime::save_checkpoint_set(MPI_COMM_WORLD, dir, 1, data);
    }), sampler);
    float checked = 0;
    const Timing r = sample_until_stable(together([&] {
      const runtime::CheckpointData data = runtime::load_checkpoint_set(MPI_COMM_WORLD, dir, header, sizes);
      checked = data.tensors.back().back();
    }, true), sampler);
    if (checked != 0.5f) throw DeviceError("calibrate cpu: " + dir + " read back a wrong checkpoint");
    write.points.push_back({bytes * ranks, w});
    read.points.push_back({bytes * ranks, r});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::error_code ignored;
  if (rank == 0) std::filesystem::remove_all(dir, ignored);
  if (o.progress) o.progress("checkpoint storage (" + o.storage_dir + ") done");
  return {write, read};
}

}  // namespace trainsim
