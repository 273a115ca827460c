# Optional CUDA: TRAINSIM_CUDA=AUTO (default) enables it when nvcc is found (here: /usr/local/cuda),
# ON requires it, OFF skips it. The result is cached: wipe build/ to change it (BUILD-NOTES gotcha 4).
set(TRAINSIM_CUDA AUTO CACHE STRING "Build the CUDA parts: AUTO, ON or OFF")
set_property(CACHE TRAINSIM_CUDA PROPERTY STRINGS AUTO ON OFF)
set(TRAINSIM_HAVE_CUDA OFF)

if(NOT TRAINSIM_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # NCCL and cuBLAS link the shared runtime; the static default would put two in one binary.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)   # A100 and H100/H200; CUDA 13 has no Volta
    endif()
    set(CMAKE_CUDA_STANDARD 17)            # CMake 3.25 knows no C++20 flag for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_package(NCCL)
    if(NCCL_FOUND)
      set(TRAINSIM_HAVE_CUDA ON)
    elseif(TRAINSIM_CUDA STREQUAL "ON")
      message(FATAL_ERROR "TRAINSIM_CUDA=ON but NCCL was not found. HINT: set NCCL_ROOT to the folder holding include/nccl.h and lib/libnccl.so")
    endif()
  elseif(TRAINSIM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TRAINSIM_CUDA=ON but no CUDA compiler was found. HINT: set CUDACXX=/path/to/nvcc or use -DTRAINSIM_CUDA=OFF")
  endif()
endif()
message(STATUS "trainsim: CUDA parts ${TRAINSIM_HAVE_CUDA} (TRAINSIM_CUDA=${TRAINSIM_CUDA})")
