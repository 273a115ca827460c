// The watchdog thread, its heartbeats and the MPI error handler; see watchdog.hpp.
#include "runtime/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "runtime/rank_grid.hpp"

namespace trainsim::runtime {

namespace {

constexpr int kHeartbeatTag = 17;

// This process's progress (one rank per process), written by the training loop, read by the
// watchdog thread and the error handler.
std::atomic<double> g_progress_s{0};
std::atomic<int64_t> g_iteration{-1};
std::atomic<int> g_phase{static_cast<int>(RunPhase::kSetup)};
int g_world_rank = 0;

std::string where(int64_t iteration, int phase) {
  const std::string in = std::string("in ") + phase_name(static_cast<RunPhase>(phase));
  return iteration < 0 ? in + " before the first step" : in + " at step " + std::to_string(iteration + 1);
}

std::string seconds(double s) {
  std::ostringstream out;
  out.precision(s < 10 ? 2 : 3);
  out << s << " s";
  return out.str();
}

// An MPI error on any communicator of the job: say where this rank was, then take the job down
// (the default handler would too, without the step and phase).
void on_mpi_error(MPI_Comm* comm, int* code, ...) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(*code, text, &length);
  abort_job(*comm, "rank " + std::to_string(g_world_rank) + ": MPI error " + where(g_iteration.load(), g_phase.load()) + ": " +
                       std::string(text, static_cast<size_t>(length)));
}

}  // namespace

const char* phase_name(RunPhase phase) {
  switch (phase) {
    case RunPhase::kSetup: return "setup";
    case RunPhase::kCheckpointLoad: return "checkpoint load";
    case RunPhase::kStepStart: return "the barrier that starts a step";
    case RunPhase::kForward: return "forward";
    case RunPhase::kBackward: return "backward";
    case RunPhase::kPipelineSends: return "pipeline sends";
    case RunPhase::kOptimizer: return "gradient reduction and optimizer";
    case RunPhase::kLossAllReduce: return "loss all-reduce";
    case RunPhase::kDeviceIteration: return "the iteration on the GPU (kernels and NCCL collectives)";
    case RunPhase::kCheckpointSave: return "checkpoint save";
    case RunPhase::kFinish: return "final gathers";
  }
  return "?";
}

void note_progress(int64_t iteration, RunPhase phase) {
  g_iteration.store(iteration, std::memory_order_relaxed);
  g_phase.store(static_cast<int>(phase), std::memory_order_relaxed);
  g_progress_s.store(wall_s(), std::memory_order_release);
}

void abort_job(MPI_Comm world, const std::string& message) {
  std::cerr << message + "\n" << std::flush;  // one write: the other ranks' messages come at the same time
  MPI_Abort(world, 1);
  std::abort();  // MPI_Abort does not return
}

Watchdog::Watchdog(MPI_Comm world, double timeout_s) : world_(world), timeout_s_(timeout_s) {
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &size_);
  g_world_rank = rank_;
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(on_mpi_error, &handler);
  MPI_Comm_set_errhandler(world, handler);
  MPI_Errhandler_free(&handler);
  note_progress(-1, RunPhase::kSetup);
  if (timeout_s_ <= 0 || size_ == 1) return;  // one rank has nobody to wait for
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  heartbeats_ = level == MPI_THREAD_MULTIPLE;
  // A beat every second (more often for short timeouts), so a peer silent for three is named well
  // inside the timeout.
  interval_s_ = std::min(1.0, timeout_s_ / 5);
  peers_.resize(static_cast<size_t>(size_));
  for (Peer& p : peers_) p.heard_s = wall_s();
  if (heartbeats_) MPI_Comm_dup(world, &beats_);  // freed by MPI_Finalize: heartbeats may still be on their way
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Heartbeats are a few bytes, sent eagerly: they complete without their receiver.
  for (Peer& p : peers_) {
    if (p.request != MPI_REQUEST_NULL) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
  }
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  double next_beat_s = 0, tick_s = wall_s();
  while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
    const double now_s = wall_s();
    // Seconds between ticks of 0.1 s: this process itself was stopped (SIGSTOP, then SIGCONT from
    // mpirun as it takes the job down) or starved; its own stall is then no peer's doing.
    if (now_s - tick_s > 2.0) note_progress(g_iteration.load(), static_cast<RunPhase>(g_phase.load()));
    tick_s = now_s;
    if (heartbeats_ && now_s >= next_beat_s) {
      beat(now_s);
      next_beat_s = now_s + interval_s_;
    }
    const double stalled_s = now_s - g_progress_s.load(std::memory_order_acquire);
    if (stalled_s > timeout_s_) {
      abort_job(world_, "rank " + std::to_string(rank_) + ": no progress for " + seconds(stalled_s) + " " +
                            where(g_iteration.load(), g_phase.load()) + " (--collective-timeout " + seconds(timeout_s_) +
                            "); " + describe_peers(now_s) + "; stopping all " + std::to_string(size_) + " ranks");
    }
  }
}

// Sends this rank's place to every peer whose previous heartbeat has gone (a stopped peer's stay
// queued: nothing more is sent to it), and takes in the peers' heartbeats.
void Watchdog::beat(double now_s) {
  const int64_t state[3] = {g_iteration.load(), g_phase.load(), static_cast<int64_t>(now_s - g_progress_s.load())};
  for (int r = 0; r < size_; ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    if (r == rank_) continue;
    int done = 1;
    if (p.request != MPI_REQUEST_NULL) MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
    if (!done) continue;
    std::copy(state, state + 3, p.sent);
    MPI_Isend(p.sent, 3, MPI_INT64_T, r, kHeartbeatTag, beats_, &p.request);
  }
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, beats_, &arrived, &status);
    if (!arrived) break;
    Peer& p = peers_[static_cast<size_t>(status.MPI_SOURCE)];
    MPI_Recv(p.state, 3, MPI_INT64_T, status.MPI_SOURCE, kHeartbeatTag, beats_, MPI_STATUS_IGNORE);
    p.heard_s = now_s;
    p.heard = true;
  }
}

// The ranks whose heartbeats stopped (three beats missed); if none, those that are alive but
// without progress themselves (a rank wedged in its own code).
std::string Watchdog::describe_peers(double now_s) const {
  if (!heartbeats_) return "rank(s) not responding: unknown (no heartbeats: MPI is not MPI_THREAD_MULTIPLE)";
  std::string silent, stuck;
  for (int r = 0; r < size_; ++r) {
    const Peer& p = peers_[static_cast<size_t>(r)];
    if (r == rank_) continue;
    const std::string place = p.heard ? where(p.state[0], static_cast<int>(p.state[1])) : "never heard from";
    if (now_s - p.heard_s > 3 * interval_s_) {
      silent += (silent.empty() ? "" : ", ") + std::to_string(r) + " (silent for " + seconds(now_s - p.heard_s) + "; last " + place + ")";
    } else if (static_cast<double>(p.state[2]) >= timeout_s_ / 2) {
      stuck += (stuck.empty() ? "" : ", ") + std::to_string(r) + " (" + place + ", no progress for " + std::to_string(p.state[2]) + " s)";
    }
  }
  if (!silent.empty()) return "rank(s) not responding: " + silent;
  if (!stuck.empty()) return "every rank's heartbeat is alive; also without progress: rank(s) " + stuck;
  return "every rank's heartbeat is alive and the others are making progress";
}

}  // namespace trainsim::runtime
