// CudaOptimizer: norm runs, master upload, clipped AdamW; see cuda_optimizer.hpp.
#include "runtime/cuda/cuda_optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kernels.cuh"

namespace trainsim::cuda {

bool counts_in_norm(const ParamView& v, int64_t pp, int64_t pp_rank, int64_t tp_rank) {
  const bool duplicate_embedding = v.name == "wte" && pp > 1 && pp_rank != 0;
  return (v.tp_split || tp_rank == 0) && !duplicate_embedding;
}

std::vector<std::pair<int64_t, int64_t>> norm_runs(const std::vector<ParamView>& views, const std::vector<bool>& counts,
                                                   int64_t begin, int64_t end) {
  TRAINSIM_ASSERT(counts.size() == views.size(), "norm_runs: one norm flag per parameter");
  // Runs of counting tensors; the zero padding between two of them may be summed with them.
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (size_t i = 0; i < counts.size(); ++i) {
    const ParamView& v = views[i];
    if (!counts[i]) continue;
    const bool joins = !runs.empty() && (i > 0 && counts[i - 1]);
    if (joins) {
      runs.back().second = v.offset + v.count();
    } else {
      runs.emplace_back(v.offset, v.offset + v.count());
    }
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [from, to] : runs) {
    const int64_t a = std::max(from, begin), b = std::min(to, end);
    if (a < b) out.emplace_back(a - begin, b - begin);
  }
  return out;
}

CudaOptimizer::CudaOptimizer(const ParamStore& params, int64_t begin, int64_t end, const std::vector<bool>& counts,
                             DeviceArena& arena, cudaStream_t stream)
    : begin_(begin), end_(end), weights_(params.weights() + begin) {
  TRAINSIM_ASSERT(counts.size() == params.views().size(), "CudaOptimizer: one norm flag per parameter");
  TRAINSIM_ASSERT(0 <= begin && begin <= end && end <= params.padded_count(), "CudaOptimizer: range inside the buffers");
  norm_runs_ = norm_runs(params.views(), counts, begin, end);
  const std::vector<float>& initial = params.initial_values();
  TRAINSIM_ASSERT(static_cast<int64_t>(initial.size()) == params.padded_count(), "CudaOptimizer: initial values still held");
  allocate(initial.data() + begin, arena, stream);
}

CudaOptimizer::CudaOptimizer(const ParamStore& params, const std::vector<bool>& counts, DeviceArena& arena, cudaStream_t stream)
    : begin_(0), end_(params.shard_space().count), weights_(params.weight_shards()) {
  TRAINSIM_ASSERT(params.zero3(), "CudaOptimizer: the shard-space optimizer is for ZeRO-3");
  norm_runs_ = params.shard_space().norm_runs(params.layout(), counts);
  TRAINSIM_ASSERT(static_cast<int64_t>(params.initial_values().size()) == params.padded_count(), "CudaOptimizer: initial values still held");
  const std::vector<float> mine = params.shard_space().take(params.layout(), params.initial_values());
  allocate(mine.data(), arena, stream);
}

void CudaOptimizer::allocate(const float* initial, DeviceArena& arena, cudaStream_t stream) {
  const int64_t n = end_ - begin_;
  master_ = DeviceBuffer<float>(arena, n, "fp32 master weights");
  m_ = DeviceBuffer<float>(arena, n, "AdamW first moment");
  v_ = DeviceBuffer<float>(arena, n, "AdamW second moment");
  norm_sq_ = DeviceBuffer<double>(arena, 1, "gradient norm");
  check_cuda(cudaMemcpyAsync(master_.data(), initial, master_.bytes(), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync (master weights)");
  check_cuda(cudaMemsetAsync(m_.data(), 0, m_.bytes(), stream), "cudaMemsetAsync (AdamW m)");
  check_cuda(cudaMemsetAsync(v_.data(), 0, v_.bytes(), stream), "cudaMemsetAsync (AdamW v)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (optimizer states)");
}

std::vector<std::vector<float>> CudaOptimizer::state_to_host(cudaStream_t stream) const {
  std::vector<std::vector<float>> out;
  for (const DeviceBuffer<float>* b : {&master_, &m_, &v_}) {
    out.emplace_back(static_cast<size_t>(b->count()));
    check_cuda(cudaMemcpyAsync(out.back().data(), b->data(), b->bytes(), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (checkpoint)");
  }
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (checkpoint)");
  return out;
}

void CudaOptimizer::state_from_host(const std::vector<std::vector<float>>& state, int64_t steps, cudaStream_t stream) {
  TRAINSIM_ASSERT(state.size() == 3, "CudaOptimizer::state_from_host: master, m and v");
  const DeviceBuffer<float>* buffers[3] = {&master_, &m_, &v_};
  for (size_t i = 0; i < 3; ++i) {
    TRAINSIM_ASSERT(static_cast<int64_t>(state[i].size()) == buffers[i]->count(), "CudaOptimizer::state_from_host: sizes");
    check_cuda(cudaMemcpyAsync(buffers[i]->data(), state[i].data(), buffers[i]->bytes(), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (resume)");
  }
  if (end_ > begin_) fp32_to_bf16(master_.data(), weights_, end_ - begin_, stream);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (resume)");
  step_ = steps;
}

double CudaOptimizer::step(const float* grads, MPI_Comm norm_comm, float learning_rate, double grad_clip, cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(norm_sq_.data(), 0, sizeof(double), stream), "cudaMemsetAsync (norm)");
  for (const auto& [from, to] : norm_runs_) sum_of_squares(grads + from, nullptr, to - from, norm_sq_.data(), stream);
  double local = 0, total = 0;
  check_cuda(cudaMemcpyAsync(&local, norm_sq_.data(), sizeof(double), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (norm)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (norm)");
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, norm_comm);
  const double norm = std::sqrt(total);
  const float clip = norm > grad_clip ? static_cast<float>(grad_clip / norm) : 1.0f;
  AdamW settings;
  settings.lr = learning_rate;
  settings.beta1 = 0.9f;
  settings.beta2 = 0.95f;
  settings.eps = 1e-8f;
  settings.weight_decay = 0.0f;
  settings.step = ++step_;
  if (end_ > begin_) {
    adamw(master_.data(), grads, m_.data(), v_.data(), weights_, end_ - begin_, settings, clip, stream);
  }
  return norm;
}

}  // namespace trainsim::cuda
