#!/usr/bin/env bash
# own_host.sh COMMAND...: runs COMMAND as its own NCCL host. Several ranks on one GPU: NCCL refuses
# two ranks of one host on one GPU, so each rank claims a host of its own (socket transport on lo).
export NCCL_HOSTID=trainsim-host-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=1
exec "$@"
