# Installs the dashboard's npm dependencies (web/package-lock.json) with `npm ci`.
# Run by the build (src/server/CMakeLists.txt) whenever package-lock.json changes:
#   cmake -DWEB_DIR=<web folder> -DSTAMP=<file touched on success> -P npm_ci.cmake
find_program(TW_NPM npm)
if(NOT TW_NPM)
  message(FATAL_ERROR
    "npm is not installed, and the dashboard's uPlot comes from npm (pinned in "
    "${WEB_DIR}/package-lock.json) to be built into the trainwatch binary.\n"
    "Install Debian's nodejs and npm (scripts/install-deps does: apt-get install nodejs npm), "
    "then build again.")
endif()
message(STATUS "npm ci in ${WEB_DIR}")
execute_process(COMMAND ${TW_NPM} ci --no-audit --no-fund --loglevel=error
                WORKING_DIRECTORY ${WEB_DIR} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "`npm ci` in ${WEB_DIR} failed (exit ${rc}, output above). It needs the npm registry "
    "(or a warm npm cache) to install the versions package-lock.json pins.")
endif()
file(TOUCH ${STAMP})
