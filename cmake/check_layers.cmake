# cmake/check_layers.cmake — fails when a file in lib/<folder>/ (or a subfolder) includes a header of a folder that
# lib/CMakeLists.txt does not list among that folder's layers below (MASR_LAYER_<folder>).
#   cmake -DLIB_DIR=<lib> -DLAYERS_FILE=<layers.cmake> [-DSTAMP=<file>] -P cmake/check_layers.cmake
# lib/CMakeLists.txt runs it when configuring and before building the library, so an include that
# runs up the layers stops the build with the file, the line and the folders it may use.
if(NOT LIB_DIR OR NOT LAYERS_FILE)
  message(FATAL_ERROR "check_layers: give -DLIB_DIR and -DLAYERS_FILE")
endif()
include(${LAYERS_FILE})  # sets MASR_LAYERS and MASR_LAYER_<folder>

set(violations "")
foreach(folder ${MASR_LAYERS})
  file(GLOB_RECURSE files ${LIB_DIR}/${folder}/*.h ${LIB_DIR}/${folder}/*.cpp ${LIB_DIR}/${folder}/*.cu)
  set(allowed ${folder} ${MASR_LAYER_${folder}})
  foreach(path ${files})
    file(STRINGS ${path} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" target "${line}")
      # Only the library's own folders are layers; other quoted paths are not checked.
      list(FIND MASR_LAYERS ${target} is_layer)
      list(FIND allowed ${target} ok)
      if(is_layer GREATER -1 AND ok EQUAL -1)
        file(RELATIVE_PATH rel ${LIB_DIR} ${path})
        string(REPLACE ";" " " may "${MASR_LAYER_${folder}}")
        string(APPEND violations "  lib/${rel}: ${line}\n"
               "    (lib/${folder}/ may include: ${may}; it is below ${target}/)\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "mamba-asr layers: includes that run up the layers "
                      "(docs/architecture.md; the layers are declared in lib/CMakeLists.txt):\n"
                      "${violations}")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
