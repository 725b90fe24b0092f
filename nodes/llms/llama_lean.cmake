# Passed to the llama-cpp-python build as -DCMAKE_PROJECT_INCLUDE (nodes/llms/local_runtime.py): CMake reads it
# after every project() call of that build.
#
# llama-cpp-python forces llama.cpp's LLAMA_BUILD_COMMON on (`set(... CACHE BOOL ... FORCE)` in its
# CMakeLists.txt), so `-DLLAMA_BUILD_COMMON=OFF` cannot turn it off. That builds llama.cpp's "common" library
# (argument parsing, chat templates, JSON schemas, downloads) and cpp-httplib: about 50 of the build's 127 C++
# objects, none of them loaded by the Python package (it loads libllama, libggml* and libmtmd only). A normal
# variable shadows the cache entry (policy CMP0126 keeps it when the cache is forced; CMP0077 makes llama.cpp's
# option() leave it alone), so llama.cpp sees OFF and builds only the libraries the package ships.
set(LLAMA_BUILD_COMMON OFF)
