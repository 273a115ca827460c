// Lowering: a model and a plan -> the work one rank of each pipeline stage does for one
// micro-batch, as ops with their per-rank shapes: GEMMs (M, N, K after tensor-parallel
// splitting), fused or unfused attention, memory-bound kernels (bytes moved), and the
// collectives they need (kind, group, buffer bytes in the nccl-tests convention). Costs are not
// assigned here: sim/ prices each op. Op lists follow Megatron-LM's transformer layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.hpp"
#include "plan/parallel_plan.hpp"
#include "plan/rank_grid.hpp"
#include "plan/rank_memory.hpp"

namespace trainsim {

enum class OpKind { kGemm, kAttention, kMemoryBound, kCollective };
enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

struct Op {
  OpKind kind = OpKind::kMemoryBound;
  const char* name = "";
  // kGemm: (m x k) . (k x n), `batch` independent products
  int64_t m = 0, n = 0, k = 0, batch = 1;
  // kAttention: batch x heads problems of (seq x head_dim), causal; forward or backward pass.
  // attention_head_dim is the Q/K head width (the kernel's shape is priced by it); V heads are
  // attention_v_head_dim wide where they differ (MLA: 192 and 128), else 0 (= attention_head_dim).
  int64_t attention_batch_heads = 0, attention_seq = 0, attention_head_dim = 0, attention_v_head_dim = 0;
  // Context parallelism: the sequence's queries are spread over this many ranks (load-balanced
  // causal chunks); this rank does 1/attention_cp of the work.
  int64_t attention_cp = 1;
  // Sliding-window attention: each query sees the last `attention_window` keys (0: the whole
  // causal prefix). The kernel skips the tiles outside the band.
  int64_t attention_window = 0;
  bool backward = false;  // an attention op's backward pass; a memory op's eager_ops are autograd nodes
  // The layer block holding the op, for CUDA graph capture (CudaGraphScope: kGraphAttn, kGraphMlp,
  // kGraphMoeRouter, kGraphMoe); 0: outside a layer (embedding, head, loss, per-chunk work).
  uint32_t graph_scope = 0;
  // kGemm of a grouped linear that Transformer Engine issues as one cuBLAS GEMM per local expert
  // (its multi-stream path; HostStack::kTransformerEngine): the launches; 0: one kernel.
  int32_t expert_launches = 0;
  // PyTorch ops the framework issues one at a time from a Python loop for this op (Megatron-Core's
  // per-expert bias add): aten calls in a forward op, autograd nodes in a backward one (`backward`);
  // priced on the host per op (sim/step_cost.cpp), 0: none beyond the op itself.
  int32_t eager_ops = 0;
  // The host waits for the device to finish everything before it issues this op (a synchronous
  // copy between host and device in the framework's code): the device then idles while the host
  // issues what follows, until the host is ahead again (sim/step_cost.cpp).
  bool host_sync = false;
  // kMemoryBound: bytes read + written
  double bytes = 0;
  // kCollective
  CollectiveKind collective = CollectiveKind::kAllReduce;
  GroupKind group = GroupKind::kTp;
  // A collective that runs concurrently with another op of the same list (its index), as
  // Megatron-LM overlaps the backward TP collectives with the weight- or input-gradient GEMM;
  // only the part longer than that op is exposed. -1: on the critical path.
  int32_t overlaps_op = -1;
  // How the overlap goes (Transformer Engine's userbuffers, `tp_comm_overlap`): the share of the
  // hiding op's time that can hide this collective (a ring exchange's first chunk runs before any
  // data arrives: (t - 1) / t), the share of the collective always exposed (a pipelined
  // reduce-scatter's last split: 1 / splits), and the SMs the communication kernel takes from the
  // hiding op for all of its run (0: copy engines move the data). Defaults: a bulk overlap.
  double overlap_hideable_fraction = 1.0;
  double overlap_exposed_fraction = 0.0;
  int32_t overlap_comm_sms = 0;
  // kGemm of a torchao row-wise FP8 linear (Fp8Recipe::kRowwise): priced as the 16-bit GEMM
  // divided by this measured speedup of the whole float8 linear (casts included); 0: not one.
  double fp8_linear_speedup = 0;
  // kMemoryBound: of `bytes`, those of the column-wise (transposed) FP8 copy that only GPUs whose
  // FP8 GEMMs take the TN layout alone need (Hopper); a GPU whose FP8 GEMMs take every layout
  // (Blackwell: CostModel::fp8_gemm_any_layout) skips them.
  double tn_layout_bytes = 0;
  // kGemm of a linear under FP8 blockwise scaling (Fp8Recipe::kBlockwise): priced at the GPU's
  // block-scaled FP8 GEMM rate (CostModel::fp8_blockwise_gemm_slowdown).
  bool fp8_block_scaled = false;
  // An MoE all-to-all of the flex dispatcher (MoeDispatcher::kFlex; 0: NCCL's all-to-all): `bytes`
  // are the top-k copies, of `dedup_experts` experts over the EP group; a token crosses to each
  // other node holding one of its experts once (CostModel::node_dedup_exchange_s).
  int32_t dedup_top_k = 0, dedup_experts = 0;
  double flops() const;  // 2mnk*batch for GEMMs; attention: QK^T and AV (and backward's 2.5x), causal half
  // Of a causal attention's query-key pairs, the share a sliding window keeps (1 without one).
  double attention_window_share() const;
};

struct LayerWork {
  std::vector<Op> forward;    // one transformer layer, one micro-batch
  std::vector<Op> backward;   // its backward (dgrad, wgrad, attention backward, TP collectives)
  std::vector<Op> recompute;  // what recomputation runs again before the backward
};

struct StageWork {
  int64_t stage = 0;
  int64_t layers = 0;
  std::vector<int64_t> chunk_layers;  // layers of each model chunk (vpp of them; one without interleaving)
  // Of each chunk's layers, those whose LayerWork::recompute runs (plan/recompute_span.hpp: block
  // N recomputes the first N of a chunk; every layer otherwise).
  std::vector<int64_t> chunk_recomputed_layers;
  // Of each chunk's layers, the MoE model's dense first layers (ModelSpec: MoeSpec::dense_layers),
  // priced with IterationWork::dense_layer; 0 in every chunk of other models.
  std::vector<int64_t> chunk_dense_layers;
  // Beside the layers: the embedding (the rank of the first virtual stage) and the final norm, LM
  // head and loss (the rank of the last: the last rank, or with the V placement the first).
  std::vector<Op> embedding_forward, embedding_backward;
  std::vector<Op> head_forward, head_backward;
  double send_bytes = 0;           // activation sent between stages per micro-batch (0 without a pipeline)
  double params = 0;               // parameters of one rank that train (before ZeRO sharding; LoRA: its adapters)
  double expert_params = 0;        // of which routed experts under expert parallelism
  double params_per_layer = 0;     // a transformer layer's parameters on one rank
};

struct IterationWork {
  LayerWork layer;                // every transformer layer does the same work (an MoE model's: an MoE layer)
  LayerWork dense_layer;          // an MoE model's dense first layers (their FFN dense, no exchange); empty otherwise
  std::vector<StageWork> stages;  // one per pipeline stage
  RankMemory memory;              // memory per GPU per stage (plan/rank_memory)
  bool v_placement = false;       // model chunks placed in a V (ZB-V): place_of_virtual_stage
  double grad_bytes_per_param = 4;  // fp32 main gradients are reduced (Megatron-LM default)
  double weight_bytes_per_param = 2;
  // Once per model chunk and micro-batch, beside its layers' work (FP8's amax reductions).
  std::vector<Op> chunk_forward, chunk_backward;
  // Bytes moved per transformer-layer parameter once per iteration (FP8's weight casts).
  double weight_cast_bytes_per_param = 0;
  double weight_cast_tn_bytes_per_param = 0;  // of which the transposed copy (Op::tn_layout_bytes)
  // The MoE token exchange of a layer's forward hidden under the backward of another micro-batch
  // and the reverse (ParallelPlan::ep_comm_overlap; sim/step_cost.cpp prices it): the share of a
  // stage's forwards (and backwards) that run paired, 0 without the overlap. Megatron-Core pairs
  // every one but the warm-up's forwards and the cool-down's backwards: 1 of m micro-batches
  // without a pipeline, (pp - 1) x 2 + (vpp - 1) x pp of m x vpp on the first stage with
  // interleaving (schedules.py's warm-up count; later stages have fewer: taken for every stage).
  double ep_overlap_paired_share = 0;
  // Who issues the ops and what CUDA graphs capture (the plan's host_stack and cuda_graphs).
  HostStack host_stack = HostStack::kPytorch;
  CudaGraphs cuda_graphs = 0;
  // Megatron's pipeline without interleaving exchanges activations with batch_isend_irecv and then
  // torch.cuda.synchronize() (megatron/core/pipeline_parallel/p2p_communication.py, batch_p2p_comm
  // and batch_p2p_sync, both on by default there and set so by Megatron-Bridge's CommOverlapConfig
  // for pp > 1 without virtual stages): every pipeline step starts with the host waiting for the
  // device (sim/step_cost.cpp). Interleaved schedules overlap their exchanges and do not.
  bool step_host_sync = false;
  // CPU activation offloading (ParallelPlan::cpu_offload_layers; pp 1): the layers offloaded, and
  // the seconds one layer's activations take over the host link each way (set by the simulator
  // from the GPU's host link; each copy overlaps the next layer's forward or backward).
  int64_t offloaded_layers = 0;
  double offloaded_layer_bytes = 0;
  double offload_copy_s = 0;
};

// The plan must be valid for the model (validate_plan). `target`: the GPU's memory rules.
IterationWork lower_iteration(const ModelSpec& model, const ParallelPlan& plan, const MemoryTarget& target = {});

const char* to_string(CollectiveKind kind);

}  // namespace trainsim
