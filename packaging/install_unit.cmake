# Install-time half of Packaging.cmake: installs systemd/keyshim.service with
# ExecStart= naming the keyshim installed under this prefix. Runs inside
# cmake_install.cmake, after Packaging.cmake's install(CODE) has set the
# KEYSHIM_UNIT_* variables. KEYSHIM_RELOCATABLE_UNIT (set by
# packaging/CPackOptions.cmake for the tarball) keeps the shipped unit as is.
file(READ "${KEYSHIM_UNIT_SOURCE}" keyshim_unit)
if(NOT KEYSHIM_RELOCATABLE_UNIT)
  set(keyshim_bin "${CMAKE_INSTALL_PREFIX}/${KEYSHIM_UNIT_BINDIR}/keyshim")
  # The same rules as service::systemd_exec_path(): systemd refuses quotes and
  # backslashes in a program path, expands %-specifiers (but not $VARIABLES)
  # in it, and needs it quoted when it holds blanks.
  if(keyshim_bin MATCHES "[\"'\\]")
    message(FATAL_ERROR "keyshim: systemd cannot run ${keyshim_bin}: its path contains a quote "
                        "or backslash; install to another prefix")
  endif()
  string(REPLACE "%" "%%" keyshim_exec "${keyshim_bin}")
  if(keyshim_exec MATCHES "[ \t]")
    set(keyshim_exec "\"${keyshim_exec}\"")
  endif()
  string(REPLACE "\nExecStart=/usr/bin/keyshim " "\nExecStart=${keyshim_exec} "
         keyshim_unit "${keyshim_unit}")
endif()
file(WRITE "${KEYSHIM_UNIT_STAGING}" "${keyshim_unit}")
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${KEYSHIM_UNIT_DIR}" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${KEYSHIM_UNIT_STAGING}")
