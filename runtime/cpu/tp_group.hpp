// The tensor-parallel collectives a model stage needs, behind one interface: all-reduce of
// partial sums, and (sequence parallelism) all-gather / reduce-scatter of token rows; and the two
// boundaries of a TP region built from them (Megatron's f and g). The single-rank group does
// nothing; runtime/cpu/mpi_groups.cpp implements it over MPI and times it.
#pragma once

#include "kernels/cpu/cpu_kernels.hpp"

namespace trainsim::cpu {

class TpGroup {
 public:
  virtual ~TpGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  virtual void all_reduce(Matrix& m) = 0;                    // sum over ranks, in place
  virtual void all_reduce_max(Matrix& m) = 0;                // element-wise max over ranks, in place
  virtual Matrix all_gather_rows(const Matrix& shard) = 0;   // concatenate row blocks in rank order
  virtual Matrix reduce_scatter_rows(const Matrix& full) = 0;  // sum, then this rank's row block
};

class SingleRankGroup final : public TpGroup {
 public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  void all_reduce(Matrix&) override {}
  void all_reduce_max(Matrix&) override {}
  Matrix all_gather_rows(const Matrix& shard) override { return shard; }
  Matrix reduce_scatter_rows(const Matrix& full) override { return full; }
};

// Leaving the tensor-parallel region: partial sums over TP ranks are summed (all-reduce), or with
// SP summed and split by token rows (reduce-scatter). Entering it: token rows gathered (SP only).
inline Matrix leave_tp_region(Matrix partial, bool sp, TpGroup& tp) {
  if (sp) return tp.reduce_scatter_rows(partial);
  tp.all_reduce(partial);
  return partial;
}

inline Matrix enter_tp_region(Matrix rows, bool sp, TpGroup& tp) {
  if (sp) return tp.all_gather_rows(rows);
  return rows;
}

}  // namespace trainsim::cpu
