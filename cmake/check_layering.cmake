# The library's layering rule (docs: the "Layout" of ../shared/STYLE.md, README "Repository
# layout"): the library, everything under src/ but src/cli/, and the public headers under
# include/, never include a header of the bench (bench/), the command (src/cli/) or the tests
# (tests/). Run as a script:
#   cmake -DROOT=<source tree> -P cmake/check_layering.cmake
# It fails (FATAL_ERROR, exit 1) naming each offending include. A quoted include is resolved the
# way the library's targets resolve it: against the including file's folder, include/, src/ and
# the build's generated folders; an include that resolves only in bench/, tests/ (any folder the
# bench or tests put on their include paths) or src/cli/ is a violation.
if(NOT ROOT)
  message(FATAL_ERROR "check_layering: pass -DROOT=<source tree>")
endif()
file(GLOB_RECURSE _files LIST_DIRECTORIES false
     "${ROOT}/src/*.h" "${ROOT}/src/*.hpp" "${ROOT}/src/*.cpp" "${ROOT}/src/*.cu" "${ROOT}/src/*.cuh" "${ROOT}/src/*.in"
     "${ROOT}/include/*.h" "${ROOT}/include/*.hpp")
set(_forbidden_roots "${ROOT}/bench" "${ROOT}/tests" "${ROOT}/tests/reference" "${ROOT}/src/cli")
set(_violations "")
foreach(_f IN LISTS _files)
  file(RELATIVE_PATH _rel "${ROOT}" "${_f}")
  if(_rel MATCHES "^src/cli/")
    continue()
  endif()
  get_filename_component(_dir "${_f}" DIRECTORY)
  file(STRINGS "${_f}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" _inc "${_line}")
    if(_inc MATCHES "^(bench|tests|cli)/" OR _inc MATCHES "\\.\\./")
      list(APPEND _violations "${_rel}: #include \"${_inc}\"")
      continue()
    endif()
    if(EXISTS "${_dir}/${_inc}" OR EXISTS "${ROOT}/include/${_inc}" OR EXISTS "${ROOT}/src/${_inc}")
      continue()
    endif()
    foreach(_root IN LISTS _forbidden_roots)
      if(EXISTS "${_root}/${_inc}")
        list(APPEND _violations "${_rel}: #include \"${_inc}\" resolves only in ${_root}")
        break()
      endif()
    endforeach()
  endforeach()
endforeach()
if(_violations)
  list(JOIN _violations "\n  " _msg)
  message(FATAL_ERROR "check_layering: the library includes bench, command or test headers:\n  ${_msg}")
endif()
list(LENGTH _files _n)
message(STATUS "check_layering: ${_n} library files, no include of bench/, src/cli/ or tests/")
