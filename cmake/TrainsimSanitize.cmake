# Optional sanitizer build: TRAINSIM_SANITIZE=address,undefined (default empty: off). It instruments
# every target (compile and link), turns UBSan reports into hard failures and skips the CUDA parts,
# which ASan cannot follow into the driver. scripts/sanitize.sh configures, builds and tests it.
set(TRAINSIM_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined (empty: none)")

if(TRAINSIM_SANITIZE)
  set(sanitize_flags -fsanitize=${TRAINSIM_SANITIZE} -fno-omit-frame-pointer)
  if(TRAINSIM_SANITIZE MATCHES "undefined")
    list(APPEND sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${sanitize_flags})
  add_link_options(${sanitize_flags})
  # Set before TrainsimCuda.cmake reads it: nvcc-built kernels are not instrumented.
  set(TRAINSIM_CUDA OFF CACHE STRING "Build the CUDA parts: AUTO, ON or OFF" FORCE)
  message(STATUS "trainsim: sanitizers ${TRAINSIM_SANITIZE} (CUDA parts off)")
endif()
