// GPU time per phase of one iteration, from CUDA events: a span is a pair of events recorded on
// one stream (its GPU time, waits inside it included); once the iteration's streams have finished
// the spans are summed per kind. Also a pool of timing-free events for stream dependencies.
// Events are reused from iteration to iteration (reset() before each).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <vector>

namespace trainsim::cuda {

enum class SpanKind {
  kForward,        // a forward step on the compute stream (TP collectives inside included)
  kBackward,       // a backward step (recomputation and TP collectives inside included)
  kTpInForward,    // TP / SP collectives inside forward spans
  kTpInBackward,   // ... inside backward spans
  kTpOther,        // ... elsewhere (gradient sums over TP after the backward)
  kDpExposed,      // the compute stream waiting for, or running, DP / ZeRO / tied-embedding reductions
  kDpInForward,    // ZeRO-3: a forward span waiting for a layer's weight all-gather
  kDpInBackward,   // ... a backward span waiting for a gather, or for a layer's gradient buffer
  kPpExposed,      // the compute stream waiting for the last pipeline sends
  kOptimizer,      // norm, clipping, AdamW (the host's norm all-reduce included)
  kCount
};

class EventClock {
 public:
  EventClock() = default;
  ~EventClock();
  EventClock(const EventClock&) = delete;
  EventClock& operator=(const EventClock&) = delete;

  int begin(cudaStream_t stream);  // records the start; returns the span's id
  void end(int span, SpanKind kind, cudaStream_t stream);
  void reset();
  // Seconds per kind; call after the streams holding the spans are synchronised.
  std::array<double, static_cast<size_t>(SpanKind::kCount)> seconds() const;

 private:
  cudaEvent_t next_event();
  struct Span {
    size_t start = 0, stop = 0;
    SpanKind kind = SpanKind::kForward;
    bool closed = false;
  };
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
  std::vector<Span> spans_;
};

// Events without timing for "stream B waits for this point of stream A".
class EventPool {
 public:
  EventPool() = default;
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // Records a fresh event on `stream` and returns it (valid until reset()).
  cudaEvent_t record(cudaStream_t stream);
  // `waiter` waits for everything enqueued on `stream` so far.
  void order(cudaStream_t stream, cudaStream_t waiter) ;
  void reset() { used_ = 0; }

 private:
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

}  // namespace trainsim::cuda
