/* `Columns` (engines/columns_type.c): a table's rows held as one array per column, which the
 * connection loops (decoding/rows.c) append to and `schema.to_table` turns into Arrow arrays
 * without a dict per row. Python reads a row as a dict on demand (`columns[i]`). */
#ifndef KIPWIRE_CAPTURES_COLUMNS_H
#define KIPWIRE_CAPTURES_COLUMNS_H

#include "../reading/compiled.h"

typedef struct {
    PyObject_HEAD
    PyObject *names;  /* tuple of interned str, the columns in order */
    PyObject *index;  /* dict: name -> its position in `names` */
    Py_ssize_t width; /* len(names) */
    Py_ssize_t size;  /* rows held */
    Py_ssize_t cap;   /* rows every column has room for */
    PyObject ***cols; /* cols[c][i] for i < size: a reference held, never NULL */
} columns_obj;

extern PyTypeObject columns_type;

/* A column on its way to Arrow buffers (columns.c's arrow_columns): kind 1-4 (int16, int32,
 * int64 or a timestamp's int64, string) while its values fit, C_LIST once one does not. */
enum { C_LIST, C_INT16, C_INT32, C_INT64, C_STRING };

typedef struct {
    int kind;           /* C_*, C_LIST once a value does not fit */
    Py_ssize_t nulls;
    PyObject *validity; /* bytes: one bit per row, 1 = a value */
    PyObject *values;   /* bytes: fixed-width values, or int32 offsets (n + 1) */
    PyObject *data;     /* bytes: string data, grown by _PyBytes_Resize */
    Py_ssize_t used;    /* string data written */
} column_t;

/* Room for n rows of `kind`; 0 or -1. */
int column_start(column_t *c, int kind, Py_ssize_t n);
/* Row i's value `v` (NULL or None: null) into the column, which turns C_LIST when the buffers
 * do not take it; 0 or -1. */
int column_put(column_t *c, Py_ssize_t i, PyObject *v);
/* A column not C_LIST as (null count, validity or None, values or offsets, data or None). */
PyObject *column_buffers(column_t *c);
void column_clear(column_t *c);

/* Adds the type to the module as `Columns`; 0 or -1. */
int columns_add_type(PyObject *module);

/* Appends one row: values[c] for column c (new references, taken even on error); 0 or -1,
 * and on error the table is as it was. No Python code runs. */
int columns_append(columns_obj *self, PyObject **values);

/* Room for n more rows; 0 or -1. */
int columns_reserve(columns_obj *self, Py_ssize_t n);

/* Appends one row mapping: each column's value under its name, None when it has none (a key's
 * __eq__ may run before the table is touched); 0 or -1, the table as it was on error. */
int columns_append_mapping(columns_obj *self, PyObject *row);

/* Cuts every column back to its first n rows, any exception kept. */
void columns_cut(columns_obj *self, Py_ssize_t n);

#endif
