# Compiler launcher, linker and warnings shared by every target.

find_program(MLPERFC_CCACHE ccache)
if(MLPERFC_CCACHE)
  # The precompiled MLIR header changes __DATE__/__TIME__-free content only, so these
  # sloppiness settings are safe and let ccache hit on PCH users.
  set(launcher ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${MLPERFC_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${launcher})
  message(STATUS "mlperfc: using ccache (${MLPERFC_CCACHE})")
endif()

# lld links the large static MLIR archives several times faster than GNU ld.
find_program(MLPERFC_LLD ld.lld)
if(MLPERFC_LLD)
  add_link_options(-fuse-ld=lld)
endif()

add_compile_options(
  $<$<COMPILE_LANGUAGE:CXX>:-Wall>
  $<$<COMPILE_LANGUAGE:CXX>:-Wextra>
  $<$<COMPILE_LANGUAGE:CXX>:-Wno-unused-parameter>
  # MLIR API deprecations are errors (gcc, the main build). clang with libstdc++ 12 flags that
  # library's own deprecated get_temporary_buffer inside std::stable_sort, so for the clang
  # sanitizer/fuzz builds they stay warnings.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Werror=deprecated-declarations>)
