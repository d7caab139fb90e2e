# One source of truth for the version: project(VERSION). The git revision is
# appended when the source tree is a git checkout, so bug reports say exactly
# what was built.
set(KEYSHIM_GIT_REVISION "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=10 HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE KEYSHIM_GIT_REVISION
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  # A commit or a checkout changes HEAD or the branch it names: configure
  # again then, or a rebuild would still report the revision of the first
  # configure. Only files that exist (a packed branch has no file of its own).
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE git_head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND ${GIT_EXECUTABLE} symbolic-ref -q HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE git_branch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(git_watched "${git_head}")
  if(git_branch)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path "${git_branch}" --git-path packed-refs
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE git_refs OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    string(REPLACE "\n" ";" git_refs "${git_refs}")
    list(APPEND git_watched ${git_refs})
  endif()
  foreach(file IN LISTS git_watched)
    get_filename_component(file "${file}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
    if(EXISTS "${file}")
      set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
    endif()
  endforeach()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.hpp.in
               ${PROJECT_BINARY_DIR}/generated/keyshim/version.hpp @ONLY)
