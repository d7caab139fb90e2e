# ctest script (tests/CMakeLists.txt, test "packaging"): install the built
# tree into a scratch prefix and build the packages, then check each holds
# the binary, the systemd user units (service and socket), the example pool file,
# the man pages and the shell completions where a distribution package would put them.
#
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DCPACK_COMMAND=... -P check_packages.cmake
#
# CPack first runs the build's "preinstall" target, which is a no-op when the
# tree has just been built (as it has when ctest runs).
foreach(var BUILD_DIR WORK_DIR CPACK_COMMAND)
  if(NOT ${var})
    message(FATAL_ERROR "check_packages.cmake needs -D${var}=...")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT code EQUAL 0)
    string(REPLACE ";" " " shown "${ARGN}")
    message(FATAL_ERROR "${shown} failed (${code}):\n${out}")
  endif()
endfunction()

function(expect_listed listing expected what)
  foreach(entry IN LISTS expected)
    string(FIND "${listing}" "${entry}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${what} lacks ${entry}; it holds:\n${listing}")
    endif()
  endforeach()
endfunction()

# packaging/Docs.cmake: the man pages and completions, relative to the prefix.
set(docs share/man/man1/keyshim.1.gz share/man/man5/keyshim-pool.5.gz share/bash-completion/completions/keyshim
         share/zsh/vendor-completions/_keyshim share/fish/vendor_completions.d/keyshim.fish)

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# cmake --install: the unit names the binary installed beside it.
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file bin/keyshim lib/systemd/user/keyshim.service lib/systemd/user/keyshim.socket
             share/doc/keyshim/keys.example.toml share/doc/keyshim/dev.keyshim.plist ${docs})
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "cmake --install did not install ${file}")
  endif()
endforeach()
file(STRINGS ${prefix}/lib/systemd/user/keyshim.service exec_start REGEX "^ExecStart=")
if(NOT exec_start STREQUAL "ExecStart=${prefix}/bin/keyshim serve -c %h/.config/keyshim/keys.toml")
  message(FATAL_ERROR "installed unit has ${exec_start}, not the installed binary")
endif()
message(STATUS "cmake --install: ok")

# The tarball.
set(packages ${WORK_DIR}/packages)
run(${CPACK_COMMAND} -G TGZ --config ${BUILD_DIR}/CPackConfig.cmake -B ${packages})
file(GLOB tarball ${packages}/*.tar.gz)
run(${CMAKE_COMMAND} -E tar tf ${tarball})
execute_process(COMMAND ${CMAKE_COMMAND} -E tar tf ${tarball} OUTPUT_VARIABLE listing)
list(TRANSFORM docs PREPEND / OUTPUT_VARIABLE tarball_docs)
expect_listed("${listing}" "/bin/keyshim;/lib/systemd/user/keyshim.service;/lib/systemd/user/keyshim.socket;/share/doc/keyshim/keys.example.toml;/share/doc/keyshim/dev.keyshim.plist;${tarball_docs}"
              ${tarball})
message(STATUS "${tarball}: ok")

# The .deb, where dpkg-deb exists (Debian package dpkg; dpkg-dev adds
# dpkg-shlibdeps for the computed Depends).
find_program(DPKG_DEB dpkg-deb)
if(NOT DPKG_DEB)
  message(STATUS "dpkg-deb not found: .deb not checked")
  return()
endif()
run(${CPACK_COMMAND} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${packages})
file(GLOB deb ${packages}/*.deb)
execute_process(COMMAND ${DPKG_DEB} -c ${deb} OUTPUT_VARIABLE listing)
list(TRANSFORM docs PREPEND ./usr/ OUTPUT_VARIABLE deb_docs)
expect_listed("${listing}" "./usr/bin/keyshim;./usr/lib/systemd/user/keyshim.service;./usr/lib/systemd/user/keyshim.socket;./usr/share/doc/keyshim/keys.example.toml;${deb_docs}"
              ${deb})
execute_process(COMMAND ${DPKG_DEB} -f ${deb} Depends Section Maintainer OUTPUT_VARIABLE control)
expect_listed("${control}" "libc6;libfmt9;Section: utils" "${deb} control")
# The packaged unit is the shipped one: /usr/bin/keyshim is where the .deb puts it.
execute_process(COMMAND ${DPKG_DEB} --fsys-tarfile ${deb} OUTPUT_FILE ${WORK_DIR}/deb.tar)
file(MAKE_DIRECTORY ${WORK_DIR}/deb)
execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf ${WORK_DIR}/deb.tar ./usr/lib/systemd/user/keyshim.service
                WORKING_DIRECTORY ${WORK_DIR}/deb)
file(STRINGS ${WORK_DIR}/deb/usr/lib/systemd/user/keyshim.service exec_start REGEX "^ExecStart=")
if(NOT exec_start STREQUAL "ExecStart=/usr/bin/keyshim serve -c %h/.config/keyshim/keys.toml")
  message(FATAL_ERROR "the .deb's unit has ${exec_start}")
endif()
message(STATUS "${deb}: ok")
