// MPI collective sweep for the CPU profile: all-reduce, all-gather, reduce-scatter and broadcast
// over every group size that divides the job (all groups at once), send/recv between neighbours,
// sizes 1 KiB upwards in steps of 4, with the nccl-tests size and bandwidth conventions. Each case
// checks its result; alpha/beta fitted per table.
#include <mpi.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate/collective_fit.hpp"
#include "calibrate/cpu_calibrator.hpp"
#include "calibrate/sampler.hpp"
#include "common/errors.hpp"

namespace trainsim {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Case {
  const char* kind;
  double bus_factor;  // busbw = algbw x factor
};

// One table: `kind` over the groups of `comm` (every group runs it at once, as the runtime's
// TP or DP groups of one plan do), sizes 1 KiB x group size upwards in steps of 4.
CollectiveTable sweep_one(const Case& c, MPI_Comm group, int per_node, double max_bytes, const SamplerOptions& sampler) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &ranks);
  const std::string kind = c.kind;
  CollectiveTable t;
  t.kind = kind;
  t.ranks = ranks;
  t.ranks_per_node = std::min(per_node, ranks);
  t.nodes = (t.ranks + t.ranks_per_node - 1) / t.ranks_per_node;
  const float mine = static_cast<float>(rank + 1);
  for (double bytes = 1024 * static_cast<double>(ranks); bytes <= max_bytes; bytes *= 4) {
    const size_t count = static_cast<size_t>(bytes / sizeof(float));  // S: the whole buffer
    const size_t shard = count / static_cast<size_t>(ranks);
    std::vector<float> full(count), out(count, 0.0f), part(shard, mine);
    // As the runtime calls them: the all-reduce in place on a buffer just written by this rank.
    std::function<void()> body;
    if (kind == "all-reduce") body = [&] { MPI_Allreduce(MPI_IN_PLACE, full.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, group); };
    if (kind == "all-gather") body = [&] { MPI_Allgather(part.data(), static_cast<int>(shard), MPI_FLOAT, out.data(), static_cast<int>(shard), MPI_FLOAT, group); };
    if (kind == "reduce-scatter") body = [&] { MPI_Reduce_scatter_block(full.data(), out.data(), static_cast<int>(shard), MPI_FLOAT, MPI_SUM, group); };
    if (kind == "broadcast") body = [&] { MPI_Bcast(full.data(), static_cast<int>(count), MPI_FLOAT, 0, group); };
    if (kind == "send-recv") body = [&] {
      if (rank == 0) MPI_Send(full.data(), static_cast<int>(count), MPI_FLOAT, 1, 7, group);
      if (rank == 1) MPI_Recv(out.data(), static_cast<int>(count), MPI_FLOAT, 0, 7, group, MPI_STATUS_IGNORE);
    };
    const Timing timing = sample_until_stable([&] {
      std::fill(full.begin(), full.end(), mine);
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = now_s();
      body();
      double seconds = now_s() - start, slowest = 0;
      // A collective ends when the last rank does; every group's sample is the slowest of all.
      MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return slowest;
    }, sampler);
    // Check: sums of 1..n, gathered rank ids, broadcast of rank 0's value.
    const float sum = static_cast<float>(ranks * (ranks + 1) / 2);
    bool ok = true;
    if (kind == "all-reduce") ok = full[count / 2] == sum;
    if (kind == "all-gather") ok = out[shard * static_cast<size_t>(ranks - 1)] == static_cast<float>(ranks);
    if (kind == "reduce-scatter") ok = out[0] == sum;
    if (kind == "broadcast") ok = full[count / 2] == 1.0f;
    if (kind == "send-recv" && rank == 1) ok = out[count / 2] == 1.0f;
    int all_ok = ok ? 1 : 0, agreed = 0;
    MPI_Allreduce(&all_ok, &agreed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!agreed) throw DeviceError("calibrate cpu: MPI " + kind + " of " + std::to_string(static_cast<int64_t>(bytes)) + " bytes over " + std::to_string(ranks) + " ranks gave a wrong result");
    CollectivePoint pt;
    pt.bytes = static_cast<double>(count * sizeof(float));
    pt.timing = timing;
    pt.algbw_gb_per_s = pt.bytes / timing.median_s / 1e9;
    pt.busbw_gb_per_s = pt.algbw_gb_per_s * c.bus_factor;
    t.points.push_back(pt);
  }
  t.fit = fit_alpha_beta(t.points);
  return t;
}

}  // namespace

std::vector<CollectiveTable> mpi_collective_sweep(const CpuCalibrationOptions& o, const SamplerOptions& sampler) {
  int world_rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int per_node = 1;
  MPI_Comm_size(node, &per_node);
  MPI_Comm_free(&node);
  const double max_bytes = o.quick ? 4.0 * (1 << 20) : 64.0 * (1 << 20);
  std::vector<CollectiveTable> tables;
  // Every group size that divides the job, in groups of consecutive ranks (the TP groups of a
  // plan; a plan's DP and PP groups of the same size are priced from the same table). Send/recv
  // pairs up neighbours (pipeline stages).
  for (int size = 2; size <= world; ++size) {
    if (world % size != 0) continue;
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank / size, world_rank % size, &group);
    const double n = size;
    const Case cases[] = {{"all-reduce", 2 * (n - 1) / n}, {"all-gather", (n - 1) / n}, {"reduce-scatter", (n - 1) / n},
                          {"broadcast", 1.0}, {"send-recv", 1.0}};
    for (const Case& c : cases) {
      if (std::string(c.kind) == "send-recv" && size != 2) continue;
      tables.push_back(sweep_one(c, group, per_node, max_bytes, sampler));
      if (o.progress) o.progress("MPI " + std::string(c.kind) + " over " + std::to_string(size) + " ranks done");
    }
    MPI_Comm_free(&group);
  }
  return tables;
}

}  // namespace trainsim
