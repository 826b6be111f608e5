# The CUDA headers scanforge compiles against: cuda.h and nvrtc.h, for types only (NVRTC and
# libcuda are opened at run time, docs/dependencies.md). Sets CUDAToolkit_INCLUDE_DIRS.
# A CUDA toolkit's headers come first; without a toolkit, the TensorFlow build takes the
# copies TensorFlow's wheel ships (include/third_party/gpus/cuda/include), so a CPU-only
# `pip install --no-build-isolation .` needs no toolkit.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  return()
endif()
set(scanforge_cuda_hint
    "install the CUDA toolkit (12 or 13; or point CUDAToolkit_ROOT at one), or configure with -DSCANFORGE_WITH_TENSORFLOW=ON to use the copies TensorFlow ships")
if(NOT SCANFORGE_WITH_TENSORFLOW)
  message(FATAL_ERROR "scanforge needs the CUDA headers cuda.h and nvrtc.h and found no CUDA toolkit: ${scanforge_cuda_hint}")
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env TF_CPP_MIN_LOG_LEVEL=3
          ${Python3_EXECUTABLE} -c "import tensorflow as tf; print(tf.sysconfig.get_include())"
  OUTPUT_VARIABLE scanforge_tf_include OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE scanforge_tf_result ERROR_QUIET)
string(REGEX MATCH "[^\n]*$" scanforge_tf_include "${scanforge_tf_include}") # the print is the last line
set(scanforge_tf_cuda "${scanforge_tf_include}/third_party/gpus/cuda/include")
if(NOT scanforge_tf_result EQUAL 0 OR NOT EXISTS "${scanforge_tf_cuda}/cuda.h" OR NOT EXISTS "${scanforge_tf_cuda}/nvrtc.h")
  message(FATAL_ERROR "scanforge needs the CUDA headers cuda.h and nvrtc.h; there is no CUDA toolkit and "
                      "${Python3_EXECUTABLE}'s TensorFlow has no copies under ${scanforge_tf_cuda}: ${scanforge_cuda_hint}")
endif()
set(CUDAToolkit_INCLUDE_DIRS "${scanforge_tf_cuda}")
message(STATUS "No CUDA toolkit: CUDA headers (types only) from TensorFlow: ${scanforge_tf_cuda}")
