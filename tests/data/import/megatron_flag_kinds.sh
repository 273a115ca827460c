#!/bin/bash
# Llama 3 8B on 8 GPUs: --recompute-activations (Megatron-LM's selective recomputation), a misspelt
# --sequence-paralel, a known flag trainsim does not model (--manual-gc) and one without effect on
# speed or memory (--lr).
torchrun --nproc-per-node 8 --nnodes 1 pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 \
    --ffn-hidden-size 14336 --swiglu --normalization RMSNorm \
    --position-embedding-type rope --rotary-base 500000 --untie-embeddings-and-output-weights --disable-bias-linear \
    --seq-length 8192 --max-position-embeddings 8192 \
    --tensor-model-parallel-size 2 --sequence-paralel --use-distributed-optimizer \
    --micro-batch-size 1 --global-batch-size 64 \
    --recompute-activations --manual-gc --bf16 --attention-backend fused \
    --lr 3e-4
