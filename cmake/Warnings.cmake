# Compiler warnings for the project's own code (after curl's
# CMake/PickyWarnings.cmake): strict enough to catch real bugs, quiet
# enough that a warning means something.
set(METER_WARNINGS
  -Wall -Wextra -Wpedantic
  -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition
  -Wpointer-arith -Wcast-align -Wwrite-strings -Wformat=2 -Wundef
  -Wvla -Wnull-dereference -Wimplicit-fallthrough
  -Wconversion -Wno-sign-conversion)
add_compile_options(${METER_WARNINGS})
if(METER_WERROR)
  add_compile_options(-Werror)
endif()
