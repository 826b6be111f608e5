# Installs the C library for other programs (README "Installing the C library"):
#   lib/libscanforge.so, lib/libscanforge.a, include/scanforge/scanforge.h,
#   lib/cmake/scanforge/ (find_package(scanforge): scanforge::scanforge),
#   lib/pkgconfig/scanforge.pc (pkg-config --cflags --libs [--static] scanforge).
# The command goes to bin/ (top-level CMakeLists.txt).
include(CMakePackageConfigHelpers)

install(TARGETS scanforge scanforge_shared EXPORT scanforgeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/scanforge DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- CMake package ---------------------------------------------------------------
set(SCANFORGE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/scanforge)
install(EXPORT scanforgeTargets NAMESPACE scanforge:: DESTINATION ${SCANFORGE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/scanforgeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/install/scanforgeConfig.cmake INSTALL_DESTINATION ${SCANFORGE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/install/scanforgeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion) # 0.x: a minor release may change the API
install(FILES ${PROJECT_BINARY_DIR}/install/scanforgeConfig.cmake
              ${PROJECT_BINARY_DIR}/install/scanforgeConfigVersion.cmake
        DESTINATION ${SCANFORGE_CMAKE_DIR})

# ---- pkg-config --------------------------------------------------------------------
# The static library needs Lua, Jansson and xxHash at the consumer's link: name their
# pkg-config modules (Lua's name differs between distributions).
pkg_search_module(SCANFORGE_LUA_PC QUIET lua5.4 lua-5.4 lua54)
if(SCANFORGE_LUA_PC_FOUND)
  set(SCANFORGE_PC_REQUIRES_PRIVATE "${SCANFORGE_LUA_PC_MODULE_NAME} jansson libxxhash")
  set(SCANFORGE_PC_LIBS_PRIVATE "-pthread -ldl -lm")
else()
  set(SCANFORGE_PC_REQUIRES_PRIVATE "jansson libxxhash")
  set(SCANFORGE_PC_LIBS_PRIVATE "-llua5.4 -pthread -ldl -lm")
endif()
# Relocatable: the prefix is found from the file's own place, so `cmake --install --prefix`
# anywhere gives a working file.
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set(SCANFORGE_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
  set(SCANFORGE_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
else()
  file(RELATIVE_PATH SCANFORGE_PC_UP /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
  string(REGEX REPLACE "/$" "" SCANFORGE_PC_UP "${SCANFORGE_PC_UP}")
  set(SCANFORGE_PC_PREFIX "\${pcfiledir}/${SCANFORGE_PC_UP}")
  set(SCANFORGE_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
  set(SCANFORGE_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
else()
  set(SCANFORGE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/scanforge.pc.in ${PROJECT_BINARY_DIR}/install/scanforge.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/install/scanforge.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
