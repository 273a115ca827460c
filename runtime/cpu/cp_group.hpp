// The context-parallel ring a model stage needs (ring attention): each rank passes a block to the
// next CP rank and takes the previous rank's, all ranks at once. The single-rank ring hands the
// block back; runtime/cpu/mpi_groups.cpp implements it over MPI and times it.
#pragma once

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::cpu {

class CpGroup {
 public:
  virtual ~CpGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // Sends `block` to rank (rank + 1) % size and returns what rank (rank - 1) % size sent (same shape).
  virtual Matrix ring_shift(const Matrix& block) = 0;
};

class SingleRankRing final : public CpGroup {
 public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  Matrix ring_shift(const Matrix& block) override { return block; }
};

}  // namespace trainsim::cpu
