# The man pages keyshim(1) and keyshim-pool(5) and the bash, zsh and fish
# completions. keyshim_docgen writes them at build time from the CLI11
# application and the settings table, the same sources --help, the parser and
# the README's reference come from, so none of them is a list that can drift.
# They live in the build directory and are installed from there.

add_executable(keyshim_docgen ${PROJECT_SOURCE_DIR}/src/docgen_main.cpp)
target_link_libraries(keyshim_docgen PRIVATE keyshim_core)
keyshim_warnings(keyshim_docgen)

set(KEYSHIM_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
set(KEYSHIM_DOCS_FILES keyshim.1 keyshim-pool.5 keyshim.bash _keyshim keyshim.fish)
list(TRANSFORM KEYSHIM_DOCS_FILES PREPEND ${KEYSHIM_DOCS_DIR}/ OUTPUT_VARIABLE keyshim_docs_outputs)
add_custom_command(OUTPUT ${keyshim_docs_outputs}
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${KEYSHIM_DOCS_DIR}
                   COMMAND keyshim_docgen ${KEYSHIM_DOCS_DIR}
                   DEPENDS keyshim_docgen
                   COMMENT "Writing the man pages and shell completions"
                   VERBATIM)
# Installed compressed, as Debian policy (12.1) asks of man pages; -n keeps the
# name and time stamp out, so the same page gives the same bytes.
set(keyshim_man_gz)
foreach(page keyshim.1 keyshim-pool.5)
  add_custom_command(OUTPUT ${KEYSHIM_DOCS_DIR}/${page}.gz
                     COMMAND sh -c "gzip -9nc '${page}' > '${page}.gz'"
                     DEPENDS ${KEYSHIM_DOCS_DIR}/${page}
                     WORKING_DIRECTORY ${KEYSHIM_DOCS_DIR}
                     VERBATIM)
  list(APPEND keyshim_man_gz ${KEYSHIM_DOCS_DIR}/${page}.gz)
endforeach()
add_custom_target(keyshim_docs ALL DEPENDS ${keyshim_docs_outputs} ${keyshim_man_gz})

install(FILES ${KEYSHIM_DOCS_DIR}/keyshim.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${KEYSHIM_DOCS_DIR}/keyshim-pool.5.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
# Where Debian's bash-completion, zsh and fish look for a package's completions.
install(FILES ${KEYSHIM_DOCS_DIR}/keyshim.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME keyshim)
install(FILES ${KEYSHIM_DOCS_DIR}/_keyshim DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${KEYSHIM_DOCS_DIR}/keyshim.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
