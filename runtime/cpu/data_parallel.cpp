// Gradient buckets, ZeRO 0-3 and AdamW; see data_parallel.hpp.
#include "runtime/cpu/data_parallel.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/cpu/mpi_groups.hpp"

namespace trainsim::cpu {

namespace {
size_t elements(const runtime::Param& p) { return static_cast<size_t>(p.value.size()); }
}  // namespace

DataParallel::DataParallel(StageModel& stage, TpGroup& tp, const DataParallelComms& comms, const DataParallelConfig& config,
                           std::vector<bool> counts_in_norm, PhaseBreakdown& clock)
    : stage_(stage), tp_(tp), comms_(comms), config_(config), clock_(clock) {
  std::vector<runtime::Param>& params = stage.params();
  for (const runtime::Param& p : params) shapes_.emplace_back(p.value.rows(), p.value.cols());
  buckets_of_layer_.assign(static_cast<size_t>(stage.layer_count()), {});
  for (int64_t l = stage.layer_count(); l-- > 0;) add_layer_buckets(l);
  const std::vector<size_t> outer = stage.outer_params();
  if (!outer.empty()) {
    buckets_.emplace_back();
    for (size_t i : outer) {
      buckets_.back().params.push_back(i);
      buckets_.back().size += elements(params[i]);
    }
  }
  for (Bucket& b : buckets_) open_bucket(b, counts_in_norm);
  stage.set_hooks(this);
}

// Buckets in backward order: layers last to first, closed once they hold bucket_params (ZeRO-3:
// one layer each); a layer's expert parameters go to the open expert bucket, the rest to the dense one.
void DataParallel::add_layer_buckets(int64_t layer) {
  const std::vector<runtime::Param>& params = stage_.params();
  for (const bool experts : {false, true}) {
    std::vector<size_t> ids;
    for (size_t i : stage_.layer_params(layer)) {
      if (params[i].expert == experts) ids.push_back(i);
    }
    if (ids.empty()) continue;
    size_t& open = open_[experts ? 1 : 0];
    if (open == kNoBucket || zero3() || buckets_[open].size >= static_cast<size_t>(config_.bucket_params)) {
      buckets_.emplace_back();
      buckets_.back().experts = experts;
      open = buckets_.size() - 1;
    }
    Bucket& b = buckets_[open];
    for (size_t i : ids) {
      b.params.push_back(i);
      b.size += elements(params[i]);
    }
    ++b.layers;
    buckets_of_layer_[static_cast<size_t>(layer)].push_back(open);
  }
}

// The bucket's group, shards, norm runs and AdamW states (ZeRO-3: keeps only its shard of the weights).
void DataParallel::open_bucket(Bucket& b, const std::vector<bool>& counts_in_norm) {
  b.comm = b.experts ? comms_.expert_dp : comms_.dp;
  has_experts_ = has_experts_ || b.experts;
  MPI_Comm_size(b.comm, &b.ranks);
  MPI_Comm_rank(b.comm, &b.rank);
  const size_t parts = static_cast<size_t>(b.ranks);
  b.padded = (b.size + parts - 1) / parts * parts;
  b.shard = b.padded / parts;
  size_t at = 0;
  for (size_t i : b.params) {
    const size_t n = elements(stage_.params()[i]);
    if (counts_in_norm[i]) {
      if (!b.norm_runs.empty() && b.norm_runs.back().second == at) {
        b.norm_runs.back().second = at + n;  // joins the run before
      } else {
        b.norm_runs.emplace_back(at, at + n);
      }
    }
    at += n;
  }
  const size_t states = config_.zero_stage == 0 ? b.padded : b.shard;
  b.m.assign(states, 0.0f);
  b.v.assign(states, 0.0f);
  if (config_.zero_stage >= 2) b.grad_shard.assign(b.shard, 0.0f);
  if (zero3()) {  // keep this rank's shard of the weights, drop the rest
    std::vector<float> values;
    pack_values(b, values);
    b.master.assign(values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b.rank) * b.shard),
                    values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b.rank + 1) * b.shard));
    release(b);
  }
}

DataParallel::~DataParallel() {
  stage_.set_hooks(nullptr);
  for (Bucket& b : buckets_) {
    if (b.request != MPI_REQUEST_NULL) MPI_Wait(&b.request, MPI_STATUS_IGNORE);
  }
}

double DataParallel::timed_start() const { return runtime::wall_s(); }
void DataParallel::timed_stop(double start) { clock_.dp_comm_exposed_s += runtime::wall_s() - start; }

void DataParallel::pack_grads(const Bucket& b, std::vector<float>& out) const {
  out.resize(b.padded);
  size_t at = 0;
  for (size_t i : b.params) {
    const runtime::Param& p = stage_.params()[i];
    std::copy(p.grad.data(), p.grad.data() + p.grad.size(), out.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<size_t>(p.grad.size());
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(at), out.begin() + static_cast<std::ptrdiff_t>(b.padded), 0.0f);
}

void DataParallel::pack_values(const Bucket& b, std::vector<float>& out) const {
  out.resize(b.padded);
  size_t at = 0;
  for (size_t i : b.params) {
    const runtime::Param& p = stage_.params()[i];
    std::copy(p.value.data(), p.value.data() + p.value.size(), out.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<size_t>(p.value.size());
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(at), out.begin() + static_cast<std::ptrdiff_t>(b.padded), 0.0f);
}

void DataParallel::unpack_values(const Bucket& b, const std::vector<float>& flat) {
  size_t at = 0;
  for (size_t i : b.params) {
    runtime::Param& p = stage_.params()[i];
    const auto [rows, cols] = shapes_[i];
    p.value.resize(rows, cols);
    std::copy(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + elements(p)), p.value.data());
    at += elements(p);
  }
}

// ZeRO-3: every rank contributes its shard; the whole bucket's weights land in the parameters.
void DataParallel::gather(Bucket& b, bool with_grads) {
  const double start = timed_start();
  std::vector<float> flat(b.padded);
  MPI_Allgather(b.master.data(), static_cast<int>(b.shard), MPI_FLOAT, flat.data(), static_cast<int>(b.shard), MPI_FLOAT, b.comm);
  timed_stop(start);
  unpack_values(b, flat);
  if (!with_grads) return;
  for (size_t i : b.params) {
    runtime::Param& p = stage_.params()[i];
    if (p.grad.size() == 0) p.grad = Matrix::Zero(shapes_[i].first, shapes_[i].second);
  }
}

void DataParallel::release(Bucket& b) {
  for (size_t i : b.params) {
    stage_.params()[i].value.resize(0, 0);
    stage_.params()[i].grad.resize(0, 0);
  }
}

// Starts the bucket's reduction (all-reduce, or reduce-scatter for ZeRO-2).
void DataParallel::launch(Bucket& b) {
  pack_grads(b, b.flat);
  b.launched = true;
  if (b.ranks == 1) {
    if (config_.zero_stage >= 2) b.grad_shard.assign(b.flat.begin(), b.flat.begin() + static_cast<std::ptrdiff_t>(b.shard));
    return;
  }
  const double start = timed_start();
  if (config_.zero_stage == 2) {
    MPI_Ireduce_scatter_block(b.flat.data(), b.grad_shard.data(), static_cast<int>(b.shard), MPI_FLOAT, MPI_SUM, b.comm, &b.request);
  } else {
    MPI_Iallreduce(MPI_IN_PLACE, b.flat.data(), static_cast<int>(b.padded), MPI_FLOAT, MPI_SUM, b.comm, &b.request);
  }
  timed_stop(start);
}

// ZeRO-3, after every micro-batch: the bucket's gradients are summed into this rank's shard.
void DataParallel::reduce_scatter_into_shard(Bucket& b) {
  pack_grads(b, b.flat);
  std::vector<float> part(b.shard);
  const double start = timed_start();
  MPI_Reduce_scatter_block(b.flat.data(), part.data(), static_cast<int>(b.shard), MPI_FLOAT, MPI_SUM, b.comm);
  timed_stop(start);
  for (size_t i = 0; i < b.shard; ++i) b.grad_shard[i] += part[i];
  std::vector<float>().swap(b.flat);
}

// MPI moves non-blocking collectives forward only inside MPI calls: test them after every layer.
void DataParallel::progress() {
  const double start = timed_start();
  for (Bucket& b : buckets_) {
    if (b.request == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Test(&b.request, &done, MPI_STATUS_IGNORE);
  }
  timed_stop(start);
}

void DataParallel::begin_iteration() {
  if (zero3() && !buckets_.empty() && buckets_.back().layers == 0) gather(buckets_.back(), true);
}

void DataParallel::before_layer(int64_t layer, bool backward) {
  if (!zero3()) return;
  for (size_t i : buckets_of_layer_[static_cast<size_t>(layer)]) gather(buckets_[i], backward);
}

void DataParallel::after_layer_forward(int64_t layer) {
  if (!zero3()) return;
  for (size_t i : buckets_of_layer_[static_cast<size_t>(layer)]) release(buckets_[i]);
}

void DataParallel::after_layer_backward(int64_t layer) {
  const std::vector<size_t>& held_by = buckets_of_layer_[static_cast<size_t>(layer)];
  if (zero3()) {
    stage_.finish_layer_gradients(layer, tp_);
    for (size_t i : held_by) {
      reduce_scatter_into_shard(buckets_[i]);
      release(buckets_[i]);
    }
    return;
  }
  if (!last_backward_) return;
  stage_.finish_layer_gradients(layer, tp_);
  for (size_t i : held_by) {
    Bucket& b = buckets_[i];
    if (++b.layers_done == b.layers && config_.overlap) launch(b);
  }
  progress();
}

double DataParallel::global_norm() {
  // ZeRO-0: every rank holds all reduced gradients; otherwise each its shards, summed over the
  // bucket's group. Squares of dense (0) and expert (1) gradients apart: every rank of an EP group
  // (with ep 1, of a TP group) holds different experts (slices), so theirs are summed over it too,
  // after which each of its TP ranks holds the stage's: TP rank 0 counts them.
  double local[2] = {0, 0};
  for (const Bucket& b : buckets_) {
    const size_t begin = config_.zero_stage == 0 ? 0 : static_cast<size_t>(b.rank) * b.shard;
    const size_t count = config_.zero_stage == 0 ? b.padded : b.shard;
    const float* g = config_.zero_stage >= 2 ? b.grad_shard.data() : b.flat.data() + begin;
    for (const auto& [from, to] : b.norm_runs) {  // the part of each run inside [begin, begin + count)
      for (size_t i = std::max(from, begin); i < std::min(to, begin + count); ++i) {
        local[b.experts ? 1 : 0] += static_cast<double>(g[i - begin]) * g[i - begin];
      }
    }
  }
  double dense = local[0], experts = local[1], total = 0;
  if (config_.zero_stage >= 1) MPI_Allreduce(&local[0], &dense, 1, MPI_DOUBLE, MPI_SUM, comms_.dp);
  if (has_experts_) {
    if (config_.zero_stage >= 1) MPI_Allreduce(&local[1], &experts, 1, MPI_DOUBLE, MPI_SUM, comms_.expert_dp);
    MPI_Allreduce(MPI_IN_PLACE, &experts, 1, MPI_DOUBLE, MPI_SUM, comms_.expert_model);
  }
  const double replica = dense + (tp_.rank() == 0 ? experts : 0.0);
  MPI_Allreduce(&replica, &total, 1, MPI_DOUBLE, MPI_SUM, comms_.model);
  return std::sqrt(total);
}

void DataParallel::adam_update(Bucket& b, const AdamSettings& adam, int64_t step_number, float clip) {
  const size_t begin = config_.zero_stage == 0 ? 0 : static_cast<size_t>(b.rank) * b.shard;
  const size_t count = config_.zero_stage == 0 ? b.padded : b.shard;
  const float* g = config_.zero_stage >= 2 ? b.grad_shard.data() : b.flat.data() + begin;
  std::vector<float> values;
  float* p = b.master.data();
  if (!zero3()) {
    values.resize(b.padded);
    pack_values(b, values);
    p = values.data() + begin;
  }
  AdamWStep s;
  s.lr = adam.lr, s.beta1 = adam.beta1, s.beta2 = adam.beta2, s.eps = adam.eps;
  s.grad_scale = clip;
  s.step = step_number;
  adamw_update(p, g, b.m.data(), b.v.data(), static_cast<int64_t>(count), s);
  if (zero3()) return;  // the next use gathers the new shards
  if (config_.zero_stage >= 1 && b.ranks > 1) {
    const double start = timed_start();
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data(), static_cast<int>(b.shard), MPI_FLOAT, b.comm);
    timed_stop(start);
  }
  unpack_values(b, values);
}

void DataParallel::step(const AdamSettings& adam, int64_t step_number) {
  stage_.finish_outer_gradients(tp_);
  std::vector<runtime::Param>& params = stage_.params();
  if (comms_.embedding != MPI_COMM_NULL) {  // the tied embedding: first and last stage hold copies
    const double start = timed_start();
    for (runtime::Param& p : params) {
      if (p.name == "wte") MPI_Allreduce(MPI_IN_PLACE, p.grad.data(), static_cast<int>(p.grad.size()), MPI_FLOAT, MPI_SUM, comms_.embedding);
    }
    timed_stop(start);
  }
  for (Bucket& b : buckets_) {
    if (zero3()) {
      if (b.layers == 0) reduce_scatter_into_shard(b);
    } else if (!b.launched) {
      launch(b);
    }
  }
  const double start = timed_start();
  for (Bucket& b : buckets_) {
    if (b.request != MPI_REQUEST_NULL) MPI_Wait(&b.request, MPI_STATUS_IGNORE);
  }
  timed_stop(start);
  const double norm = global_norm();
  const float clip = norm > adam.grad_clip ? static_cast<float>(adam.grad_clip / norm) : 1.0f;
  for (Bucket& b : buckets_) {
    adam_update(b, adam, step_number, clip);
    std::vector<float>().swap(b.flat);  // the communication buffer lives from the bucket's launch to here
    b.launched = false;
    b.layers_done = 0;
    if (zero3()) {
      std::fill(b.grad_shard.begin(), b.grad_shard.end(), 0.0f);
      release(b);
    } else {
      for (size_t i : b.params) params[i].grad.setZero();
    }
  }
}

std::vector<std::pair<float*, size_t>> DataParallel::state_tensors() {
  std::vector<std::pair<float*, size_t>> t;
  if (!zero3()) {
    for (runtime::Param& p : stage_.params()) t.emplace_back(p.value.data(), elements(p));
  }
  for (Bucket& b : buckets_) {
    if (zero3()) t.emplace_back(b.master.data(), b.master.size());
    t.emplace_back(b.m.data(), b.m.size());
    t.emplace_back(b.v.data(), b.v.size());
  }
  return t;
}

}  // namespace trainsim::cpu
