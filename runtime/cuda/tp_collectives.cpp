// TpCollectives over NCCL; see tp_collectives.hpp.
#include "runtime/cuda/tp_collectives.hpp"

#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

void TpCollectives::all_reduce(__nv_bfloat16* x, int64_t count) {
  if (!comm_.active()) return;
  const int span = clock_.begin(stream_);
  check_nccl(ncclAllReduce(x, x, static_cast<size_t>(count), ncclBfloat16, ncclSum, comm_.get(), stream_), "ncclAllReduce (tp)");
  clock_.end(span, kind_, stream_);
}

void TpCollectives::all_gather_rows(const __nv_bfloat16* shard, __nv_bfloat16* full, int64_t shard_count) {
  if (!comm_.active()) {
    check_cuda(cudaMemcpyAsync(full, shard, static_cast<size_t>(shard_count) * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync (tp all-gather of one rank)");
    return;
  }
  const int span = clock_.begin(stream_);
  check_nccl(ncclAllGather(shard, full, static_cast<size_t>(shard_count), ncclBfloat16, comm_.get(), stream_), "ncclAllGather (sp)");
  clock_.end(span, kind_, stream_);
}

void TpCollectives::reduce_scatter_rows(const __nv_bfloat16* full, __nv_bfloat16* shard, int64_t shard_count) {
  if (!comm_.active()) {
    check_cuda(cudaMemcpyAsync(shard, full, static_cast<size_t>(shard_count) * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync (tp reduce-scatter of one rank)");
    return;
  }
  const int span = clock_.begin(stream_);
  check_nccl(ncclReduceScatter(full, shard, static_cast<size_t>(shard_count), ncclBfloat16, ncclSum, comm_.get(), stream_),
             "ncclReduceScatter (sp)");
  clock_.end(span, kind_, stream_);
}

void TpCollectives::all_reduce_fp32(const std::vector<Fp32Range>& ranges) {
  if (!comm_.active() || ranges.empty()) return;
  const int span = clock_.begin(stream_);
  check_nccl(ncclGroupStart(), "ncclGroupStart (tp gradient sums)");
  for (const Fp32Range& r : ranges) {
    check_nccl(ncclAllReduce(r.data, r.data, static_cast<size_t>(r.count), ncclFloat, ncclSum, comm_.get(), stream_),
               "ncclAllReduce (tp gradient sum)");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd (tp gradient sums)");
  clock_.end(span, kind_, stream_);
}

void TpCollectives::all_reduce_max_fp32(float* x, int64_t count) {
  if (!comm_.active()) return;
  const int span = clock_.begin(stream_);
  check_nccl(ncclAllReduce(x, x, static_cast<size_t>(count), ncclFloat, ncclMax, comm_.get(), stream_), "ncclAllReduce max (tp)");
  clock_.end(span, kind_, stream_);
}

}  // namespace trainsim::cuda
