function(keyshim_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  if(KEYSHIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
