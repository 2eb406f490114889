# MLIR 22 from Debian. One linking mode: static MLIR* archives, LLVM through libLLVM.so (that is
# how Debian's MLIRTargets.cmake wires MLIRSupport -> LLVM). Never the shared `MLIR` target.
set(MLIR_DIR /usr/lib/llvm-22/lib/cmake/mlir CACHE PATH "MLIR 22 CMake package directory")
set(LLVM_EXTERNAL_LIT /usr/lib/llvm-22/bin/lit CACHE FILEPATH "lit from LLVM 22")
# MLIR's version file accepts only an exact version, so check the major version ourselves.
find_package(MLIR REQUIRED CONFIG NO_DEFAULT_PATH PATHS ${MLIR_DIR})
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "mlperfc needs MLIR 22; ${MLIR_DIR} has ${LLVM_PACKAGE_VERSION}. "
                      "Run scripts/setup.sh or point -DMLIR_DIR at an MLIR 22 install.")
endif()
message(STATUS "mlperfc: MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH ${MLIR_CMAKE_DIR} ${LLVM_CMAKE_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
set(LLVM_TOOLS_DIR /usr/lib/llvm-22/bin)

# LLVM's compile flags apply only to targets that use MLIR (never to runtime/, which keeps
# exceptions): they link this interface target instead of HandleLLVMOptions changing globals.
add_library(mlperfc_mlir_flags INTERFACE)
separate_arguments(llvm_definitions NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_definitions(mlperfc_mlir_flags INTERFACE ${llvm_definitions})
target_include_directories(mlperfc_mlir_flags SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
target_include_directories(mlperfc_mlir_flags INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
target_compile_options(mlperfc_mlir_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions>
  $<$<NOT:$<BOOL:${LLVM_ENABLE_RTTI}>>:-fno-rtti>)

# One precompiled header for the heavy MLIR headers, built once and reused by every MLIR target
# (REUSE_FROM needs identical flags, which mlperfc_mlir_flags guarantees).
add_library(mlperfc_mlir_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_stub.cpp)
target_link_libraries(mlperfc_mlir_pch PUBLIC mlperfc_mlir_flags)
target_precompile_headers(mlperfc_mlir_pch PRIVATE ${PROJECT_SOURCE_DIR}/cmake/MlirPch.h)

# Gives an MLIR-using target the LLVM flags and the shared precompiled header.
function(mlperfc_mlir_target target)
  target_link_libraries(${target} PUBLIC mlperfc_mlir_flags)
  target_precompile_headers(${target} REUSE_FROM mlperfc_mlir_pch)
endfunction()
