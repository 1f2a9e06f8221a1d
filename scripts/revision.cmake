# Writes OUT (a header defining PS_REVISION, PS_BRANCH, PS_BUILD_USER and PS_BUILD_DATE) from git in
# SRC, only when it changed, so the build info names the commit the binary was built from (run at
# every build). The date is the commit's (as Prometheus' YYYYMMDD-HH:MM:SS, UTC), so a rebuild of the
# same commit gives the same header.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git rev-parse --abbrev-ref HEAD WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE branch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND ${CMAKE_COMMAND} -E env TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d-%H:%M:%S WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
cmake_host_system_information(RESULT host QUERY HOSTNAME)
set(user "$ENV{USER}")
if(NOT user)
  set(user "unknown")
endif()
foreach(v rev branch date)
  if(NOT ${v})
    set(${v} unknown)
  endif()
endforeach()
set(text "#define PS_REVISION \"${rev}\"\n#define PS_BRANCH \"${branch}\"\n#define PS_BUILD_USER \"${user}@${host}\"\n#define PS_BUILD_DATE \"${date}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
