cmake_minimum_required(VERSION 3.25)  # a -P script: the policies of the project
# One man page: the SOURCES (markdown) concatenated, @VERSION@ filled in, @HELP@ replaced by
# the stdout of `HELP_PROGRAM --help` (the program's own --help: its options are written once), then
# through GO_MD2MAN into OUT.
set(text "")
foreach(src ${SOURCES})
  file(READ ${src} part)
  string(APPEND text "${part}\n")
endforeach()
string(REPLACE "@VERSION@" "${VERSION}" text "${text}")
if(HELP_PROGRAM)
  execute_process(COMMAND ${HELP_PROGRAM} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${HELP_PROGRAM} --help failed")
  endif()
  string(REPLACE "@HELP@" "${help}" text "${text}")
endif()
file(WRITE ${OUT}.md "${text}")
execute_process(COMMAND ${GO_MD2MAN} -in ${OUT}.md -out ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go-md2man failed on ${SOURCES}")
endif()
file(REMOVE ${OUT}.md)
