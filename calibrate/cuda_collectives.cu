// NCCL collectives in one process (see cuda_collectives.cuh), measured the nccl-tests way: out of
// place, float elements, algbw = S / t (GB = 1e9) and busbw = algbw x 2(n-1)/n for all-reduce,
// x (n-1)/n for all-gather, reduce-scatter and all-to-all (S the whole n-rank buffer), x 1 for
// broadcast and send/recv. A sample is the slowest rank's CUDA-event time. Buffers are not
// rotated (as in nccl-tests). Each size's received values are checked against closed forms.
#include "calibrate/cuda_collectives.cuh"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>

#include "calibrate/collective_fit.hpp"
#include "calibrate/cuda_fill.cuh"
#include "common/errors.hpp"

namespace trainsim {

namespace {

constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                       Collective::all_to_all, Collective::broadcast,  Collective::send_recv};

int ranks_of(Collective c, int n) { return c == Collective::send_recv ? 2 : n; }

double bus_factor(Collective c, int n) {
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

bool chunked(Collective c) {
  return c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_to_all;
}

// Floats in the whole buffer S: a multiple of n where each rank owns a chunk.
size_t element_count(Collective c, size_t bytes, int n) {
  const size_t count = bytes / sizeof(float);
  return chunked(c) ? count / n * n : count;
}

// What rank r sends: base + (i mod modulus), all exact in fp32 and in every sum below.
struct Pattern {
  float base;
  int64_t modulus;
};

Pattern send_pattern(Collective c, int rank) {
  switch (c) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: return {static_cast<float>(rank + 1), 7};
    case Collective::all_gather: return {1000.0f * rank, 13};
    case Collective::all_to_all: return {1000.0f * rank, 997};
    case Collective::broadcast: return {rank == 0 ? 0.0f : 500.0f, 11};
    case Collective::send_recv: return {rank == 0 ? 5.0f : 900.0f, 11};
  }
  return {0, 1};
}

size_t recv_count(Collective c, size_t count, int n) { return c == Collective::reduce_scatter ? count / n : count; }

double expected(Collective c, int n, int rank, size_t count, size_t i) {
  const size_t chunk = count / n;
  const double ranks_sum = n * (n + 1) / 2.0;
  switch (c) {
    case Collective::all_reduce: return ranks_sum + n * static_cast<double>(i % 7);
    case Collective::all_gather: return 1000.0 * static_cast<double>(i / chunk) + static_cast<double>(i % chunk % 13);
    case Collective::reduce_scatter: return ranks_sum + n * static_cast<double>((rank * chunk + i) % 7);
    case Collective::all_to_all:
      return 1000.0 * static_cast<double>(i / chunk) + static_cast<double>((rank * chunk + i % chunk) % 997);
    case Collective::broadcast: return static_cast<double>(i % 11);
    case Collective::send_recv: return 5.0 + static_cast<double>(i % 11);
  }
  return 0;
}

void check_count(const NcclGroup& group, Collective c, size_t count) {
  const int n = group.size();
  const size_t received = recv_count(c, count, n), chunk = count / n;
  for (int rank = c == Collective::send_recv ? 1 : 0; rank < ranks_of(c, n); ++rank) {
    for (const size_t i : {size_t{0}, size_t{1}, chunk - 1, chunk, received / 2 + 3, received - 1}) {
      if (i >= received) continue;
      float got = 0;
      check_cuda(cudaMemcpy(&got, group.recv(rank) + i, sizeof got, cudaMemcpyDeviceToHost), "reading back NCCL output");
      const double want = expected(c, n, rank, count, i);
      if (static_cast<double>(got) == want) continue;
      char text[256];
      std::snprintf(text, sizeof text, "wrong result from NCCL %s of %s on %d GPUs: rank %d element %zu is %g, "
                    "expected %g", collective_name(c), format_bytes(static_cast<double>(count * 4)).c_str(),
                    ranks_of(c, n), rank, i, static_cast<double>(got), want);
      throw DeviceError(std::string(text) + "\nHINT: rerun with NCCL_DEBUG=WARN; check the GPUs' links (nvidia-smi topo -m)");
    }
  }
}

// CUDA events around `enqueue` on every rank's stream; a sample is the slowest rank's time.
Timing time_group(const GpuContext& context, const NcclGroup& group, int ranks, const std::function<void()>& enqueue) {
  std::vector<std::unique_ptr<EventPair>> events;
  for (int r = 0; r < ranks; ++r) {
    check_cuda(cudaSetDevice(r), "cudaSetDevice");
    events.push_back(std::make_unique<EventPair>());
  }
  auto timed = [&](int calls) {
    for (int r = 0; r < ranks; ++r) {
      check_cuda(cudaSetDevice(r), "cudaSetDevice");
      events[r]->record_start(group.stream(r));
    }
    for (int i = 0; i < calls; ++i) enqueue();
    double slowest = 0;
    for (int r = 0; r < ranks; ++r) {
      check_cuda(cudaSetDevice(r), "cudaSetDevice");
      events[r]->record_stop(group.stream(r));
    }
    for (int r = 0; r < ranks; ++r) slowest = std::max(slowest, events[r]->wait_elapsed_s());
    return slowest / calls;
  };
  timed(1);  // NCCL connects its channels on first use
  const int calls = calls_per_sample(timed(1));
  const Timing timing = sample_until_stable([&] { return timed(calls); }, context.sampler);
  check_cuda(cudaSetDevice(context.device), "cudaSetDevice");
  return timing;
}

std::vector<size_t> sizes(bool quick, size_t largest) {
  std::vector<size_t> result;
  for (size_t s = 1024; s <= std::min(largest, size_t{1} << 30); s *= quick ? 64 : 4) result.push_back(s);
  return result;
}

}  // namespace

const char* collective_name(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all-reduce";
    case Collective::all_gather: return "all-gather";
    case Collective::reduce_scatter: return "reduce-scatter";
    case Collective::all_to_all: return "all-to-all";
    case Collective::broadcast: return "broadcast";
    case Collective::send_recv: return "send-recv";
  }
  return "?";
}

NcclGroup::NcclGroup(int devices, size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {
  TRAINSIM_ASSERT(devices >= 2, "an NCCL group needs two GPUs or more");
  try {
    comms_.resize(devices, nullptr);
    for (int d = 0; d < devices; ++d) {
      check_cuda(cudaSetDevice(d), "cudaSetDevice(" + std::to_string(d) + ")");
      cudaStream_t stream = nullptr;
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      streams_.push_back(stream);
      send_.emplace_back(buffer_bytes, "NCCL send buffer on GPU " + std::to_string(d));
      recv_.emplace_back(buffer_bytes, "NCCL receive buffer on GPU " + std::to_string(d));
    }
    check_nccl(ncclCommInitAll(comms_.data(), devices, nullptr),
               "ncclCommInitAll over " + std::to_string(devices) + " GPUs");
  } catch (...) {
    release();
    throw;
  }
  check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
}

NcclGroup::~NcclGroup() { release(); }

void NcclGroup::release() noexcept {
  for (ncclComm_t& comm : comms_) {
    if (comm != nullptr) ncclCommDestroy(comm);
    comm = nullptr;
  }
  for (size_t d = 0; d < streams_.size(); ++d) {
    cudaSetDevice(static_cast<int>(d));
    cudaStreamDestroy(streams_[d]);
  }
  streams_.clear();
  cudaSetDevice(0);
}

void NcclGroup::synchronize() const {
  for (int r = 0; r < size(); ++r) check_cuda(cudaStreamSynchronize(streams_[r]), "waiting for NCCL");
}

void NcclGroup::enqueue(Collective c, size_t bytes) const {
  const int n = size();
  const size_t count = element_count(c, bytes, n), chunk = count / n;
  ncclResult_t status = ncclSuccess;
  auto keep = [&](ncclResult_t s) {
    if (status == ncclSuccess) status = s;
  };
  keep(ncclGroupStart());
  for (int r = 0; r < ranks_of(c, n); ++r) {
    switch (c) {
      case Collective::all_reduce: keep(ncclAllReduce(send(r), recv(r), count, ncclFloat, ncclSum, comm(r), stream(r))); break;
      case Collective::all_gather: keep(ncclAllGather(send(r), recv(r), chunk, ncclFloat, comm(r), stream(r))); break;
      case Collective::reduce_scatter:
        keep(ncclReduceScatter(send(r), recv(r), chunk, ncclFloat, ncclSum, comm(r), stream(r)));
        break;
      case Collective::all_to_all:
        for (int peer = 0; peer < n; ++peer) {
          keep(ncclSend(send(r) + peer * chunk, chunk, ncclFloat, peer, comm(r), stream(r)));
          keep(ncclRecv(recv(r) + peer * chunk, chunk, ncclFloat, peer, comm(r), stream(r)));
        }
        break;
      case Collective::broadcast: keep(ncclBroadcast(send(r), recv(r), count, ncclFloat, 0, comm(r), stream(r))); break;
      case Collective::send_recv:
        if (r == 0) keep(ncclSend(send(0), count, ncclFloat, 1, comm(0), stream(0)));
        if (r == 1) keep(ncclRecv(recv(1), count, ncclFloat, 0, comm(1), stream(1)));
        break;
    }
  }
  keep(ncclGroupEnd());
  if (status != ncclSuccess) {
    check_nccl(status, std::string("NCCL ") + collective_name(c) + " of " + format_bytes(static_cast<double>(bytes)));
  }
}

std::vector<CollectiveTable> measure_collectives(const GpuContext& context, const NcclGroup& group, bool quick) {
  const int n = group.size();
  std::vector<CollectiveTable> tables;
  for (const Collective c : kCollectives) {
    const int ranks = ranks_of(c, n);
    fill_send_buffers(group, c);
    CollectiveTable table;
    table.kind = collective_name(c);
    table.ranks = table.ranks_per_node = ranks;
    table.nodes = 1;
    for (const size_t s : sizes(quick, group.buffer_bytes())) {
      const size_t count = element_count(c, s, n);
      for (int r = 0; r < n; ++r) {
        check_cuda(cudaSetDevice(r), "cudaSetDevice");
        check_cuda(cudaMemsetAsync(group.recv(r), 0xFF, recv_count(c, count, n) * sizeof(float), group.stream(r)),
                   "clearing NCCL receive buffers");
      }
      CollectivePoint point;
      point.bytes = static_cast<double>(count * sizeof(float));
      point.timing = time_group(context, group, ranks, [&] { group.enqueue(c, s); });
      group.synchronize();
      check_count(group, c, count);
      point.algbw_gb_per_s = point.bytes / point.timing.median_s / 1e9;
      point.busbw_gb_per_s = point.algbw_gb_per_s * bus_factor(c, n);
      table.points.push_back(point);
    }
    table.fit = fit_alpha_beta(table.points);
    const CollectivePoint& last = table.points.back();
    char line[192];
    std::snprintf(line, sizeof line, "collective %s on %d GPUs: busbw %.1f GB/s at %s; alpha %.1f us, %.1f GB/s "
                  "(rms residual %.0f%%)", table.kind.c_str(), ranks, last.busbw_gb_per_s,
                  format_bytes(last.bytes).c_str(), table.fit.alpha_s * 1e6,
                  table.fit.beta_s_per_byte > 0 ? 1e-9 / table.fit.beta_s_per_byte : 0.0,
                  table.fit.residual_rms_rel * 100);
    context.say(line);
    tables.push_back(table);
  }
  check_cuda(cudaSetDevice(context.device), "cudaSetDevice");
  return tables;
}

void fill_send_buffers(const NcclGroup& group, Collective collective) {
  for (int r = 0; r < group.size(); ++r) {
    check_cuda(cudaSetDevice(r), "cudaSetDevice");
    const Pattern pattern = send_pattern(collective, r);
    fill_modular(group.send(r), group.buffer_bytes() / sizeof(float), pattern.base, pattern.modulus, group.stream(r));
  }
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
}

void check_received(const NcclGroup& group, Collective collective, size_t bytes) {
  group.synchronize();
  check_count(group, collective, element_count(collective, bytes, group.size()));
}

double time_collective_s(const GpuContext& context, const NcclGroup& group, Collective collective, size_t bytes) {
  return time_group(context, group, ranks_of(collective, group.size()), [&] { group.enqueue(collective, bytes); })
      .median_s;
}

}  // namespace trainsim
