// The expert-parallel group an MoE layer needs: the all-to-alls that dispatch token copies to the
// ranks holding their experts and combine the results back (Megatron-Core's all-to-all token
// dispatcher). Counts are exchanged first, then rows of variable count per rank. The single-rank
// group hands everything back; runtime/cpu/mpi_groups.cpp implements it over MPI and times it.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::cpu {

class EpGroup {
 public:
  virtual ~EpGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // `send` holds size() blocks of `per_rank` counts, block d for rank d; returns the size() blocks
  // received, block s from rank s (MPI_Alltoall).
  virtual std::vector<int64_t> all_to_all_counts(const std::vector<int64_t>& send, int64_t per_rank) = 0;
  // `rows` holds send_rows[d] rows for rank d, in rank order; returns recv_rows[s] rows from each
  // rank s, in rank order (MPI_Alltoallv). recv_rows must be what the others send this rank.
  virtual Matrix all_to_all_rows(const Matrix& rows, const std::vector<int64_t>& send_rows, const std::vector<int64_t>& recv_rows) = 0;
};

class SingleRankExperts final : public EpGroup {
 public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  std::vector<int64_t> all_to_all_counts(const std::vector<int64_t>& send, int64_t) override { return send; }
  Matrix all_to_all_rows(const Matrix& rows, const std::vector<int64_t>&, const std::vector<int64_t>&) override { return rows; }
};

}  // namespace trainsim::cpu
