/* Prints the CPython struct offsets that lib/collect/python_stacks.cc's
 * kLayouts table holds, from the interpreter's own headers. Build it against
 * each supported CPython (headers with internal/):
 *   for v in 3.10.13 3.11.7 3.12.1 3.13.0; do P=/root/.pyenv/versions/$v; m=${v%.*};
 *     cc -I$P/include/python$m tests/collect/python_offsets_probe.c -o /tmp/probe && /tmp/probe; done
 * and compare with kLayouts (tests/collect/python_stacks_embed.cc checks the
 * table end to end on the same interpreters). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#endif

int main(void) {
  printf("version %s\n", PY_VERSION);
  printf("ob_type %zu\n", offsetof(PyObject, ob_type));
#if PY_VERSION_HEX >= 0x030d0000
  printf("tstate.current_frame %zu\n", offsetof(PyThreadState, current_frame));
  printf("frame.f_executable %zu\n", offsetof(_PyInterpreterFrame, f_executable));
  printf("frame.previous %zu\n", offsetof(_PyInterpreterFrame, previous));
  printf("frame.instr_ptr %zu\n", offsetof(_PyInterpreterFrame, instr_ptr));
  printf("frame.owner %zu\n", offsetof(_PyInterpreterFrame, owner));
  printf("FRAME_OWNED_BY_CSTACK %d GENERATOR %d\n", FRAME_OWNED_BY_CSTACK, FRAME_OWNED_BY_GENERATOR);
#elif PY_VERSION_HEX >= 0x030b0000
  printf("tstate.cframe %zu\n", offsetof(PyThreadState, cframe));
  printf("cframe.current_frame %zu\n", offsetof(_PyCFrame, current_frame));
  printf("frame.f_code %zu\n", offsetof(_PyInterpreterFrame, f_code));
  printf("frame.previous %zu\n", offsetof(_PyInterpreterFrame, previous));
  printf("frame.prev_instr %zu\n", offsetof(_PyInterpreterFrame, prev_instr));
  printf("frame.owner %zu\n", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030c0000
  printf("FRAME_OWNED_BY_CSTACK %d GENERATOR %d\n", FRAME_OWNED_BY_CSTACK, FRAME_OWNED_BY_GENERATOR);
#else
  printf("GENERATOR %d\n", FRAME_OWNED_BY_GENERATOR);
#endif
#else
  printf("tstate.frame %zu\n", offsetof(PyThreadState, frame));
  printf("frame.f_back %zu\n", offsetof(PyFrameObject, f_back));
  printf("frame.f_code %zu\n", offsetof(PyFrameObject, f_code));
  printf("frame.f_lasti %zu\n", offsetof(PyFrameObject, f_lasti));
#endif
#if PY_VERSION_HEX >= 0x030b0000
  printf("code.co_code_adaptive %zu\n", offsetof(PyCodeObject, co_code_adaptive));
  printf("code._co_firsttraceable %zu\n", offsetof(PyCodeObject, _co_firsttraceable));
  printf("code.co_qualname %zu\n", offsetof(PyCodeObject, co_qualname));
#endif
  printf("code.co_filename %zu\n", offsetof(PyCodeObject, co_filename));
  printf("code.co_name %zu\n", offsetof(PyCodeObject, co_name));
  printf("code.co_firstlineno %zu\n", offsetof(PyCodeObject, co_firstlineno));
  printf("sizeof PyASCIIObject %zu PyCompactUnicodeObject %zu (length at %zu, state at %zu)\n",
         sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), offsetof(PyASCIIObject, length),
         offsetof(PyASCIIObject, state));
  return 0;
}
