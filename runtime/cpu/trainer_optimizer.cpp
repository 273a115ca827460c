// The CPU trainer's optimizer step and checkpoints (runtime/cpu/trainer_impl.hpp).
#include "runtime/cpu/trainer_impl.hpp"

#include <algorithm>

#include "runtime/watchdog.hpp"

namespace trainsim::cpu {

bool Trainer::Impl::counts_in_norm(const runtime::Param& p) const {
  // Each TP-split slice once per rank, replicated parameters once per replica, the tied
  // embedding once (on the first stage); whole experts (ep > 1) on every rank, which holds its own
  // (DataParallel::global_norm counts each EP group's once).
  const bool duplicate_embedding = p.name == "wte" && plan.pp > 1 && grid.pp_rank != 0;
  return (p.tp_split || grid.tp_rank == 0 || (p.expert && plan.ep > 1)) && !duplicate_embedding;
}

void Trainer::Impl::optimizer_step() {
  AdamSettings adam;
  adam.lr = static_cast<float>(options.learning_rate);
  adam.grad_clip = options.grad_clip;
  const double start = runtime::wall_s(), dp_before = clock.dp_comm_exposed_s, tp_before = clock.tp_comm_exposed_s;
  data_parallel->step(adam, ++adam_step);
  clock.optimizer_s += runtime::wall_s() - start - (clock.dp_comm_exposed_s - dp_before) - (clock.tp_comm_exposed_s - tp_before);
}

runtime::CheckpointHeader Trainer::Impl::header(int64_t iteration) const {
  runtime::CheckpointHeader h = runtime::checkpoint_header(model, plan, grid.world_size, options.seed, 0);
  h.iteration = iteration;
  h.optimizer_step = adam_step;
  return h;
}

void Trainer::Impl::save_checkpoint(int64_t iteration) {
  runtime::note_progress(iteration, runtime::RunPhase::kCheckpointSave);
  MPI_Barrier(grid.world);
  const double start = runtime::wall_s();
  runtime::CheckpointData data;
  data.header = header(iteration);
  checkpoint_bytes = 0;
  for (const auto& [ptr, n] : data_parallel->state_tensors()) {
    data.tensors.emplace_back(ptr, ptr + n);
    checkpoint_bytes += static_cast<double>(n * sizeof(float));
  }
  runtime::save_checkpoint_set(grid.world, options.checkpoint_dir, options.checkpoint_every, data);
  MPI_Barrier(grid.world);
  save_times_s.push_back(runtime::wall_s() - start);
}

// The median save after the first (which grows the heap: first-touch page faults a long run
// pays once) and the largest rank's checkpoint bytes (collective).
void Trainer::Impl::record_checkpoint_times(Measurement& m) const {
  m.checkpoint_saves = static_cast<int64_t>(save_times_s.size());
  if (!save_times_s.empty()) {
    std::vector<double> sorted(save_times_s.begin() + (save_times_s.size() > 1 ? 1 : 0), save_times_s.end());
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    m.checkpoint_save_s = sorted[sorted.size() / 2];
  }
  double mine = checkpoint_bytes;
  MPI_Allreduce(&mine, &m.checkpoint_bytes_per_rank, 1, MPI_DOUBLE, MPI_MAX, grid.world);
}

// Loads the latest complete checkpoint; returns its iteration.
int64_t Trainer::Impl::load_checkpoint() {
  std::vector<std::pair<float*, size_t>> tensors = data_parallel->state_tensors();  // parameters (or ZeRO-3 shards), then optimizer states
  std::vector<size_t> sizes;
  for (const auto& t : tensors) sizes.push_back(t.second);
  runtime::note_progress(-1, runtime::RunPhase::kCheckpointLoad);
  const auto tell = [&](const std::string& note) {
    if (grid.world_rank == 0 && options.notify) options.notify(note);
  };
  const runtime::CheckpointData data = options.resume_from_last_good
                                  ? runtime::load_checkpoint_set(grid.world, options.checkpoint_dir, header(0), sizes, tell)
                                  : runtime::load_checkpoint_set(grid.world, options.checkpoint_dir, header(0), sizes);
  for (size_t i = 0; i < tensors.size(); ++i) std::copy(data.tensors[i].begin(), data.tensors[i].end(), tensors[i].first);
  adam_step = data.header.optimizer_step;
  return data.header.iteration;
}

}  // namespace trainsim::cpu
