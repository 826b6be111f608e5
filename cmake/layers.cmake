# The source layers, bottom to top, and the layers each one may include headers from
# (docs/architecture.md). A file belongs to the layer of the longest folder below that
# holds it; an #include "folder/name.h" belongs to the layer of its folder. A layer may
# always include its own headers and the public header scanforge/scanforge.h.
# cmake/check_layers.cmake fails the build on any other include.
set(SCANFORGE_LAYERS
  "runtime/include:"
  "base:"
  "generator:base"
  "runtime/cuda:base"
  "runtime/compile:base"
  "runtime/cache:base"
  "runtime/args:base"
  "runtime/cpu:base,runtime/args"
  "runtime/launch_config:base,generator,runtime/cuda,runtime/compile,runtime/cache"
  "runtime/launch:base,generator,runtime/cuda,runtime/compile,runtime/cache,runtime/args,runtime/cpu,runtime/launch_config"
  "runtime/check:base,runtime/cuda"
  "tuning:base,generator,runtime/cuda,runtime/compile,runtime/cache,runtime/args,runtime/cpu,runtime/launch_config,runtime/launch,runtime/check"
  "cli:base,generator,runtime/cuda,runtime/compile,runtime/cache,runtime/args,runtime/cpu,runtime/launch_config,runtime/launch,runtime/check,tuning"
  "tf_binding:base,generator,runtime/cuda,runtime/compile,runtime/cache,runtime/args,runtime/cpu,runtime/launch_config,runtime/launch,runtime/check,tuning")
