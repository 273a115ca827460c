#!/bin/bash
# Llama 3 8B on 2 nodes of 8 H100s with Megatron-LM (a trimmed copy of a typical launch script).
GPUS_PER_NODE=8
NNODES=${NNODES:-2}
TP=2
PP=2

DISTRIBUTED_ARGS="--nproc-per-node $GPUS_PER_NODE --nnodes $NNODES --node-rank ${NODE_RANK:-0} --master-addr localhost --master-port 6000"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 \
    --ffn-hidden-size 14336 --swiglu --normalization RMSNorm \
    --position-embedding-type rope --untie-embeddings-and-output-weights --disable-bias-linear \
    --seq-length 8192 --max-position-embeddings 8192 \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \
    --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --tp-comm-overlap \
    --micro-batch-size 1 --global-batch-size 128 \
    --recompute-granularity selective \
    --bf16 --transformer-impl transformer_engine \
    --lr 3e-4 --min-lr 3e-5 --train-iters 1000 --seed 1234 \
    --data-path /data/llama3_text_document --tokenizer-type HuggingFaceTokenizer \
    --save /checkpoints --load /checkpoints --log-interval 10
