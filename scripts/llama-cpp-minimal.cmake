# Included by scripts/install.sh into llama.cpp's own project() (CMAKE_PROJECT_llama.cpp_INCLUDE)
# when it compiles llama-cpp-python. bookindex loads only libllama and ggml through
# llama-cpp-python; llama.cpp's "common" library (argument parsing, chat parsers, an HTTP client
# and server) is built only for the multimodal library, which the install turns off too
# (LLAVA_BUILD=OFF). llama-cpp-python forces LLAMA_BUILD_COMMON on before it adds llama.cpp, so
# it is turned off here, after that and before llama.cpp reads the option. Together these halve
# the compile's CPU time; the kernels, and so prompt and generation speed, are the same.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp: build the common library" FORCE)
