# Per-generator CPack settings (CPACK_PROJECT_CONFIG_FILE): CPack reads this
# once for each generator, with CPACK_GENERATOR naming the current one.

# A tarball can be unpacked anywhere, so its unit cannot know where keyshim
# will be: it keeps the shipped ExecStart=/usr/bin/keyshim, and
# `keyshim service install` writes a unit for wherever the binary ended up.
# (The staging prefix CPack installs into would otherwise end up in the unit.)
if(CPACK_GENERATOR STREQUAL "TGZ")
  set(CPACK_CUSTOM_INSTALL_VARIABLES "KEYSHIM_RELOCATABLE_UNIT=ON")
endif()
