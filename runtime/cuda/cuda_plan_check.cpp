// check_cuda_plan: what the CUDA runtime refuses, all problems at once, each naming the key.
#include <string>

#include "common/errors.hpp"
#include "common/problem_list.hpp"
#include "runtime/cuda/cuda_trainer.hpp"

namespace trainsim::cuda {

namespace {

// MoE (runtime/cuda/cuda_moe.hpp): tp 1, any ep that validate_plan takes, ZeRO only with ep 1.
void add_moe_problems(const ModelSpec& m, const ParallelPlan& p, ProblemList& problems) {
  const std::string cpu = " (the CPU runtime runs it: --backend cpu --precision fp32)";
  if (!m.moe) return;
  if (p.tp > 1) {
    problems.add("plan: tp " + std::to_string(p.tp) + " with the MoE model \"" + m.name +
                 "\": the CUDA runtime runs MoE layers at tp 1; expert TP, and with ep > 1 TP ranks routing their own sequence "
                 "shards, are not implemented: spread the experts with --dp and --ep instead" + cpu);
  }
  if (p.moe_dispatcher != MoeDispatcher::kAllToAll) {
    problems.add(std::string("plan: moe_dispatcher ") + to_string(p.moe_dispatcher) + ": the CUDA runtime's dispatcher is the all-to-all (moe_dispatcher alltoall)" + cpu);
  }
  if (p.expert_tp > 1) {
    problems.add("plan: expert_tp " + std::to_string(p.expert_tp) + ": the CUDA runtime runs whole experts (expert TP 1; leave it out)" + cpu);
  }
  if (p.cp > 1) {
    problems.add("plan: cp " + std::to_string(p.cp) + " with the MoE model \"" + m.name + "\": the CUDA runtime runs MoE layers without "
                 "context parallelism" + cpu);
  }
  if (p.ep > 1 && p.zero_stage >= 1 && p.dp > 1) {
    problems.add("plan: zero " + std::to_string(p.zero_stage) + " with ep " + std::to_string(p.ep) +
                 ": the CUDA runtime's ZeRO shards one flat buffer over the dp ranks, and expert weights would need shards of their "
                 "own over the expert-DP ranks: use --zero 0 with ep > 1, or ep 1 with ZeRO" + cpu);
  }
  if (p.moe_imbalance != 1.0 || p.moe_capacity_factor > 0) {
    problems.add("plan: moe_imbalance / moe_capacity_factor: the runtime routes with its own router, dropless (leave them out: its "
                 "load is what it measures)");
  }
}

// Context parallelism: the CUDA runtime runs the p2p ring (cuda_ring_attention.hpp) on its flash
// kernels, with two equal chunks per rank of every sequence.
void add_context_parallel_problems(const ModelSpec& m, const ParallelPlan& p, ProblemList& problems) {
  if (p.cp <= 1) return;
  const std::string cp = "plan: cp " + std::to_string(p.cp);
  if (p.cp_comm != CpComm::kP2p) {
    problems.add(std::string("plan: cp_comm ") + to_string(p.cp_comm) +
                 ": the CUDA runtime's context parallelism is the p2p ring (cp_comm p2p; all_gather and a2a are priced by predict only)");
  }
  if (p.attention != AttentionKernel::kFlash) {
    problems.add(cp + " with attention unfused: the CUDA runtime's ring attention runs its flash kernels (--attention flash)");
  }
  if (m.seq_len % (2 * p.cp) != 0) {
    problems.add(cp + ": seq_len (" + std::to_string(m.seq_len) + ") must be divisible by 2 x cp (" + std::to_string(2 * p.cp) +
                 ": two load-balanced chunks per rank)");
  }
}

}  // namespace

void check_cuda_plan(const ModelSpec& m, const ParallelPlan& p, int world_size) {
  ProblemList problems;
  const std::string where = "model \"" + m.name + "\"";
  if (m.position == PositionKind::kAlibi) problems.add(where + ": positions alibi (the CUDA runtime implements learned positions and RoPE)");
  if (m.windowed_layers() > 0) problems.add(where + ": sliding-window attention (the CUDA runtime attends to the whole causal prefix)");
  if (m.position == PositionKind::kRope && m.head_dim % 2 != 0) {
    problems.add(where + ": head_dim " + std::to_string(m.head_dim) + " is odd (RoPE turns pairs of dimensions)");
  }
  if (m.mla) problems.add(where + ": multi-head latent attention is not implemented in the CUDA runtime (it runs Q, K and V projections; trainsim predict prices MLA, the runtime would train a different model)");
  if (m.moe && m.moe->dense_layers > 0) {
    problems.add(where + ": moe/dense_layers " + std::to_string(m.moe->dense_layers) + " (dense first layers of an MoE model are not implemented in the CUDA runtime: every layer is MoE there)");
  }
  if (m.dropout) problems.add(where + ": dropout is not implemented in the CUDA runtime (describe the model with \"dropout\": false)");
  if (m.head_dim * m.heads != m.hidden) problems.add(where + ": head_dim x heads (" + std::to_string(m.head_dim * m.heads) + ") must equal hidden (" + std::to_string(m.hidden) + ")");
  const bool flash = p.attention == AttentionKernel::kFlash;
  if (flash && m.head_dim > 128) {
    problems.add(where + ": head_dim " + std::to_string(m.head_dim) +
                 " > 128 (the CUDA runtime's flash attention takes heads up to 128 wide; --attention unfused takes any)");
  }
  if (m.vocab < 256) problems.add(where + ": vocab " + std::to_string(m.vocab) + " < 256 (the runtime feeds byte tokens 0-255)");
  if (p.tp > 0 && m.vocab % p.tp != 0) {
    problems.add(where + ": vocab " + std::to_string(m.vocab) + " is not divisible by tp " + std::to_string(p.tp) +
                 " (the embedding and LM head are split by vocabulary over TP ranks, as Megatron-LM splits them; Megatron pads the "
                 "vocabulary to a multiple of 128 x tp: describe the model with the padded vocab, e.g. 50304 for GPT-2)");
  }
  if (p.gpus() != world_size) {
    problems.add("plan: dp x tp x pp x cp = " + std::to_string(p.gpus()) + " ranks, but mpirun started " + std::to_string(world_size) +
                 " (run under `mpirun -np " + std::to_string(p.gpus()) + "`, one rank per GPU)");
  }
  if (p.precision != Precision::kBf16) {
    problems.add(std::string("plan: precision ") + to_string(p.precision) +
                 " must be bf16 for --backend cuda (bf16 weights and activations, fp32 master weights, gradients and AdamW states: --precision bf16)");
  }
  add_context_parallel_problems(m, p, problems);
  add_moe_problems(m, p, problems);
  if (p.vpp > 1 && m.layers % (p.pp * p.vpp) != 0) problems.add("plan: pp x vpp (" + std::to_string(p.pp * p.vpp) + ") must divide the layers (" + std::to_string(m.layers) + ") for the runtime's interleaved schedule");
  if (p.norm != NormKernel::kFused || p.cross_entropy != LossKernel::kFused) {
    problems.add("plan: norm eager / cross_entropy pytorch or compiled describe another framework's kernels; the runtime runs fused ones (norm fused, cross_entropy fused)");
  }
  if (p.recompute == Recompute::kSelectiveOp) problems.add("plan: recompute selective_op (per-op checkpointing) is not implemented by the runtime (none, selective or full)");
  if (p.recompute == Recompute::kFull && (p.recompute_method != RecomputeMethod::kUniform || p.recompute_layers != 1)) problems.add("plan: recompute full with recompute_method " + std::string(to_string(p.recompute_method)) + " and recompute_layers " + std::to_string(p.recompute_layers) + " (partial recomputation) is not implemented by the runtime (full recomputes every layer alone: uniform 1)");
  if (p.sequence_parallel && p.tp > 0 && p.cp > 0 && (p.micro_batch * m.seq_len / p.cp) % p.tp != 0) {
    problems.add("plan: sequence parallelism needs micro_batch x seq_len / cp (" + std::to_string(p.micro_batch * m.seq_len / p.cp) +
                 ") divisible by tp (" + std::to_string(p.tp) + ")");
  }
  if (flash && p.tp > 0 && p.micro_batch * (m.heads / p.tp) > 65535) {
    problems.add("plan: micro_batch x heads / tp (" + std::to_string(p.micro_batch * (m.heads / p.tp)) +
                 ") must be at most 65535 (one grid row of the flash attention kernels per sequence and head)");
  }
  problems.throw_if_any("the CUDA runtime trains GPT-2- and Llama-style models (e.g. gpt-tiny), dense or MoE, in bf16 with DP, TP (+SP; "
                        "dense only), PP (GPipe, 1F1B, interleaved), CP (p2p ring attention; dense only), EP (MoE, ZeRO-0), ZeRO-0/1/2/3, "
                        "recomputation (none, selective, full), flash or unfused attention, and checkpoints");
}

}  // namespace trainsim::cuda
