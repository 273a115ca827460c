// The runtime's answer to a rank that stops answering: the training loops note their progress (step
// and phase) here, and a watchdog thread per rank stops the whole job (MPI_Abort, so mpirun takes
// every rank down) when its rank has made no progress for the timeout, saying where it waits and
// which ranks have gone silent. A rank that dies outright is mpirun's to notice (it aborts the job
// within a second or two and names the rank); the watchdog is for the ones that hang: a stopped or
// wedged process, a rank gone into MPI_Finalize after an error while the others wait in a collective.
// Heartbeats between the watchdogs (to name the silent ranks) need MPI_THREAD_MULTIPLE; without it
// the watchdog still stops the job, naming only where its own rank waits. docs/hardening.md.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainsim::runtime {

enum class RunPhase { kSetup, kCheckpointLoad, kStepStart, kForward, kBackward, kPipelineSends, kOptimizer, kLossAllReduce,
                      kDeviceIteration, kCheckpointSave, kFinish };
const char* phase_name(RunPhase phase);

// This rank moved on: now in `phase` of iteration `iteration` (-1: before the first). Two atomic
// stores; cheap enough for every micro-batch. Does nothing while no watchdog runs.
void note_progress(int64_t iteration, RunPhase phase);

// Stops the whole job from any thread: prints `message` (one line per rank that calls it) and
// calls MPI_Abort on `world` with exit code 1, which mpirun turns into the job's end.
[[noreturn]] void abort_job(MPI_Comm world, const std::string& message);

class Watchdog {
 public:
  // Collective over `world` (it duplicates it for the heartbeats). `timeout_s` <= 0, or a job of
  // one rank: no watchdog (a lone rank waits for nobody, and a long step is not a hang).
  // Also installs an error handler on `world` (inherited by the communicators split from it) that
  // turns an MPI error into a message naming this rank's step and phase, then aborts the job.
  Watchdog(MPI_Comm world, double timeout_s);
  ~Watchdog();  // stops the thread; not collective
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  struct Peer {
    double heard_s = 0;                // when its last heartbeat arrived (steady clock)
    bool heard = false;
    int64_t state[3] = {-1, 0, 0};     // its iteration, phase and seconds without progress, as it said
    int64_t sent[3] = {0, 0, 0};       // the buffer of the heartbeat on its way to it
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void watch();
  void beat(double now_s);
  std::string describe_peers(double now_s) const;

  MPI_Comm world_ = MPI_COMM_NULL, beats_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 0, interval_s_ = 1;
  bool heartbeats_ = false;  // MPI is thread-multiple
  std::vector<Peer> peers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trainsim::runtime
