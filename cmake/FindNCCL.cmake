# Finds NCCL (no CMake config ships with it). Looks at NCCL_ROOT, the CUDA toolkit, and the
# nvidia/nccl folder of a Python install (PyTorch wheels). Defines NCCL_FOUND and NCCL::NCCL.
set(_nccl_hints $ENV{NCCL_ROOT} ${NCCL_ROOT} /usr/local/cuda ${CUDAToolkit_LIBRARY_ROOT})
file(GLOB _nccl_py_dirs /usr/lib/python3*/site-packages/nvidia/nccl /usr/local/lib/python3*/dist-packages/nvidia/nccl
     /usr/local/lib/python3*/site-packages/nvidia/nccl /opt/conda/lib/python3*/site-packages/nvidia/nccl)
list(APPEND _nccl_hints ${_nccl_py_dirs})
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR)
if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
