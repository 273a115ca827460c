# trainsim_add_cuda_module(NAME SOURCES... LINK targets...): the dlopen'ed CUDA module (a MODULE
# library, lib<NAME>.so beside the trainsim executable) that holds everything linking CUDA, so the
# executable itself needs no CUDA library. Every static library the module pulls in, transitively,
# is compiled position-independent (-fPIC, with -fno-semantic-interposition so the executable's
# copies inline as before); the module exports only its entry point (--exclude-libs,ALL, hidden
# visibility) and must resolve every symbol at link time (-z defs). Its RUNPATH (the CUDA and MPI
# folders it linked from) is the same in the build tree and installed (cli/CMakeLists.txt says why).
function(trainsim_position_independent_closure target)
  get_target_property(libs ${target} LINK_LIBRARIES)
  foreach(lib IN LISTS libs)
    if(NOT TARGET ${lib})
      continue()
    endif()
    get_target_property(imported ${lib} IMPORTED)
    get_target_property(type ${lib} TYPE)
    get_target_property(pic ${lib} POSITION_INDEPENDENT_CODE)
    if(NOT imported AND type STREQUAL "STATIC_LIBRARY" AND NOT pic)
      set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON)
      set_property(TARGET ${lib} APPEND PROPERTY COMPILE_OPTIONS $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
      trainsim_position_independent_closure(${lib})
    endif()
  endforeach()
endfunction()

function(trainsim_add_cuda_module name)
  cmake_parse_arguments(M "" "" "SOURCES;LINK" ${ARGN})
  add_library(${name} MODULE ${M_SOURCES})
  target_link_libraries(${name} PRIVATE ${M_LINK})
  set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR} CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH_USE_LINK_PATH ON)
  target_link_options(${name} PRIVATE -Wl,--exclude-libs,ALL -Wl,-z,defs)
  trainsim_position_independent_closure(${name})
endfunction()
