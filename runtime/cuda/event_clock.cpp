// EventClock and EventPool; see event_clock.hpp.
#include "runtime/cuda/event_clock.hpp"

#include "common/errors.hpp"
#include "kernels/cuda/cuda_check.cuh"

namespace trainsim::cuda {

EventClock::~EventClock() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t EventClock::next_event() {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate (timing)");
    events_.push_back(e);
  }
  return events_[used_++];
}

int EventClock::begin(cudaStream_t stream) {
  Span s;
  s.start = used_;
  check_cuda(cudaEventRecord(next_event(), stream), "cudaEventRecord (span start)");
  spans_.push_back(s);
  return static_cast<int>(spans_.size() - 1);
}

void EventClock::end(int span, SpanKind kind, cudaStream_t stream) {
  TRAINSIM_ASSERT(span >= 0 && static_cast<size_t>(span) < spans_.size() && !spans_[static_cast<size_t>(span)].closed,
                  "EventClock::end of a span that is not open");
  Span& s = spans_[static_cast<size_t>(span)];
  s.stop = used_;
  s.kind = kind;
  s.closed = true;
  check_cuda(cudaEventRecord(next_event(), stream), "cudaEventRecord (span end)");
}

void EventClock::reset() {
  used_ = 0;
  spans_.clear();
}

std::array<double, static_cast<size_t>(SpanKind::kCount)> EventClock::seconds() const {
  std::array<double, static_cast<size_t>(SpanKind::kCount)> out{};
  for (const Span& s : spans_) {
    TRAINSIM_ASSERT(s.closed, "EventClock: a span was never closed");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, events_[s.start], events_[s.stop]), "cudaEventElapsedTime");
    out[static_cast<size_t>(s.kind)] += static_cast<double>(ms) * 1e-3;
  }
  return out;
}

EventPool::~EventPool() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t EventPool::record(cudaStream_t stream) {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    events_.push_back(e);
  }
  cudaEvent_t e = events_[used_++];
  check_cuda(cudaEventRecord(e, stream), "cudaEventRecord");
  return e;
}

void EventPool::order(cudaStream_t stream, cudaStream_t waiter) {
  check_cuda(cudaStreamWaitEvent(waiter, record(stream), 0), "cudaStreamWaitEvent");
}

}  // namespace trainsim::cuda
