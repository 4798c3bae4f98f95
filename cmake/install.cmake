# `cmake --install BUILD [--prefix P]`: the public headers (P/include/hopattn), libhopattn with a
# versioned SONAME (libhopattn.so.<ABI version>), the CLI (P/bin/hopattn, finding the library
# through $ORIGIN/../lib), the cuDNN baseline plugin beside the library, a CMake package
# (find_package(hopattn CONFIG) -> hopattn::hopattn) and a pkg-config file (hopattn.pc).
# The CUDA runtime is found the standard way: the package config asks for CUDAToolkit; the
# installed files carry no build-tree or CUDA RUNPATH.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  # `pip install .` (pyproject.toml, scikit-build-core): the library alone, inside the package
  # (python/hopattn loads it with ctypes). Unversioned: wheels cannot hold the SONAME symlinks.
  install(TARGETS hopattn LIBRARY DESTINATION hopattn COMPONENT python)
  return()
endif()

file(STRINGS ${CMAKE_SOURCE_DIR}/include/hopattn/hopattn.h _hopattn_abi_line REGEX "^#define HOPATTN_ABI_VERSION [0-9]+$")
string(REGEX REPLACE ".*HOPATTN_ABI_VERSION ([0-9]+).*" "\\1" HOPATTN_ABI_VERSION "${_hopattn_abi_line}")
set_target_properties(hopattn PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${HOPATTN_ABI_VERSION})
set_target_properties(hopattn_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS hopattn EXPORT hopattnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/hopattn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS hopattn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET hopattn_cudnn)
  install(TARGETS hopattn_cudnn LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hopattn)
install(EXPORT hopattnTargets NAMESPACE hopattn:: DESTINATION ${_cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/hopattnConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/hopattnConfig.cmake INSTALL_DESTINATION ${_cmake_dir})
# 0.x: a minor version may break the API (semantic versioning before 1.0).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/hopattnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/hopattnConfig.cmake ${CMAKE_BINARY_DIR}/hopattnConfigVersion.cmake
        DESTINATION ${_cmake_dir})
configure_file(${CMAKE_SOURCE_DIR}/cmake/hopattn.pc.in ${CMAKE_BINARY_DIR}/hopattn.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hopattn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
