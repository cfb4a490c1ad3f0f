/* `kipwire.captures.reading.compiled`: the capture pipeline's hand-written hot loops, one C file beside
 * the Python code each stands in for (that code is the reference, and runs when the module is
 * not built or KIPWIRE_PURE_PYTHON=1; `native.py` loads it). compiled.c defines the module. */
#ifndef KIPWIRE_CAPTURES_COMPILED_H
#define KIPWIRE_CAPTURES_COMPILED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* TCP flags, as reading/packets.py names them */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

extern PyTypeObject *segment_type; /* reading.packets.TcpSegment, a 9-field namedtuple */
extern PyObject *empty_bytes;      /* b"" */

/* walk.c */
PyObject *native_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* reassembly.c */
PyObject *native_assemble_half(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *native_take_plain(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *native_take_items(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* ../decoding/framing.c */
PyObject *native_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* ../engines/fragments.c */
PyObject *native_group(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* ../decoding/rows.c */
PyObject *native_pdu_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* ../engines/columns.c */
PyObject *native_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *native_arrow_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
