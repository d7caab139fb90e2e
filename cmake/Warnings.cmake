function(keyshim_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  if(KEYSHIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # In a unity build every file is included into another, so GCC takes a
  # type a file keeps in its anonymous namespace for a header's, and warns
  # about each class of that file that holds one.
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()
