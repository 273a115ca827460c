// Zero Bubble pipeline schedules (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR): the
// backward of a micro-batch splits into B (the input gradient, which the previous stage waits
// for) and W (the weight gradient, which nothing waits for until the optimizer), so W passes can
// fill the bubbles 1F1B leaves. The order is built by a greedy list scheduler on per-pass costs,
// as the authors' automatic scheduler builds it, under a memory limit of k x pp micro-batches of
// pending activations (ZB-1p: k 1, 1F1B's peak; ZB-2p: k 2).
#pragma once

#include <cstdint>

#include "plan/pipeline_schedule.hpp"

namespace trainsim {

// One pass of one micro-batch on one stage (uniform over stages: Zero Bubble's scheduler takes
// the median stage's timings), and the activation a micro-batch keeps between B and W.
struct ZeroBubbleCosts {
  double forward_s = 1.0;
  double input_grad_s = 1.0;   // B
  double weight_grad_s = 1.0;  // W
  double p2p_s = 0.0;          // a send/recv between neighbouring stages
  // Fraction of a micro-batch's activation memory still held after B until W: the inputs of the
  // linear layers, 32h of (34h + 5as) bytes per token (Zero Bubble's runtime approximations
  // f_mem_approx / w_mem_approx, after Korthikanti et al. 2022; 32/34 when attention is fused).
  double weight_retained = 32.0 / 34.0;
};

// Steps per stage: forwards (kForward), input gradients (kBackward) and weight gradients
// (kWeightGrad), one of each per micro-batch, chunk 0. Every stage keeps at most k x stages
// micro-batches' activations pending (the limit Zero Bubble's runtime gives every stage: later
// stages defer W where 1F1B would leave them idle). ZB-V goes to make_zero_bubble_v_schedule.
// Throws InputError for a kind that is not Zero Bubble.
PipelineSchedule make_zero_bubble_schedule(Schedule kind, int64_t stages, int64_t micro_batches, const ZeroBubbleCosts& costs);

// ZB-V (Qi et al. 2024 §6; torchtitan's ScheduleZBVZeroBubble): two chunks per rank placed in a
// V (place_of_virtual_stage), F, B and W of each, `costs` being one chunk's passes; every rank
// keeps at most 2 x stages chunk activations pending (1F1B's first-stage peak) and starts a
// micro-batch at most 2(stages - rank) - 1 ahead of its return (zbv.py's warm-up). Needs stages >= 2.
PipelineSchedule make_zero_bubble_v_schedule(int64_t stages, int64_t micro_batches, const ZeroBubbleCosts& costs);

// Throws InputError unless `kind` is a Zero Bubble schedule, stages and micro-batches >= 1, pass
// times > 0, p2p >= 0 and weight_retained in [0, 1].
void check_zero_bubble_inputs(Schedule kind, int64_t stages, int64_t micro_batches, const ZeroBubbleCosts& costs);

// ZeroBubbleCosts::weight_retained for the model and plan: 32h / (34h + 5as), the 5as term (the
// attention scores) only when attention is unfused.
double zero_bubble_weight_retained(const ModelSpec& model, const ParallelPlan& plan);

// Sum over the stage's steps of the activation memory pending, in micro-batches of the whole
// stage (a chunk's pass counts 1/chunks; B frees all but `weight_retained`, W the rest): the peak.
double peak_pending_micro_batches(const PipelineSchedule& schedule, int64_t stage, double weight_retained);

}  // namespace trainsim
