# trainsim_embed_text(OUT_CPP SYMBOL FILE): at configure time, writes a .cpp defining
# `extern const char* const SYMBOL` holding FILE's text, so built-in configs need no install step.
# Editing FILE re-runs the configure step; the .cpp is rewritten only when its text changes.
function(trainsim_embed_text out_cpp symbol file)
  file(READ "${file}" text)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${file}")
  file(WRITE "${out_cpp}.tmp"
"// Generated from ${rel} by cmake/embed_text.cmake; edit that file instead.
namespace trainsim {
extern const char* const ${symbol};
const char* const ${symbol} = R\"trainsim_embed(${text})trainsim_embed\";
}  // namespace trainsim
")
  configure_file("${out_cpp}.tmp" "${out_cpp}" COPYONLY)
endfunction()
