# Installed layout and packages (filled in by the packaging work).
install(TARGETS keyshim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
